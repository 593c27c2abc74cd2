/**
 * stdout, written synchronously: a write that fails (EPIPE, ENOSPC) is known at once, so the
 * command stops instead of producing everything into the void before Node reports the error.
 */
import { writeSync } from "node:fs";

/**
 * OutputError: stdout cannot be written (`code`: EPIPE or ECONNRESET when the reader went away,
 * as `| head` does; ENOSPC on a full disk, ...). The command stops producing; main reports it once.
 */
export class OutputError extends Error {
  override readonly name = "OutputError";
  constructor(
    readonly code: string,
    cause: Error,
  ) {
    super(`cannot write the output: ${cause.message}`, { cause });
  }

  /**
   * Whether the reader went away, which is nothing to report. A pipe says EPIPE; a socket (a
   * parent's `stdio: "pipe"` is one) says ECONNRESET when its reader closed with data unread.
   */
  get readerGone(): boolean {
    return this.code === "EPIPE" || this.code === "ECONNRESET";
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Write text or bytes to stdout, chunk after chunk, synchronously (fs.writeSync on fd 1): a failed
 * write throws OutputError at once, where process.stdout would report it only after the command
 * had produced everything. A stdout left non-blocking by whoever opened it is waited for.
 */
export function writeOut(text: string | Uint8Array | readonly (string | Uint8Array)[]): void {
  for (const chunk of typeof text === "string" || text instanceof Uint8Array ? [text] : text) {
    const bytes = typeof chunk === "string" ? Buffer.from(chunk) : chunk;
    for (let done = 0; done < bytes.length; ) {
      try {
        done += writeSync(1, bytes, done, bytes.length - done);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code ?? "EIO";
        if (code === "EAGAIN") Atomics.wait(pause, 0, 0, 1);
        else throw new OutputError(code, err as Error);
      }
    }
  }
}
