/**
 * Holder: the parent side of a socket holder child (holder-main.ts), a separate `node` process that
 * sits in one network namespace and holds sockets for a test. Requests and replies are JSON lines on
 * the child's stdin/stdout. Every child started here is killed when this process exits, and a child
 * whose stdin closes exits by itself, so no holder outlives its test.
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import type {
  HeldSocket,
  HolderHello,
  HolderReply,
  HolderRequest,
  SocketSpec,
  WireError,
} from "./holder-protocol.js";

/** A socket by its holder id, or the record the holder returned for it. */
export type SocketRef = number | Pick<HeldSocket, "id">;

/** Options for Holder.start. */
export interface HolderOptions {
  /** Network namespace file to enter (/run/netns/NAME or /proc/PID/ns/net); default the caller's. */
  netnsPath?: string;
  /** A request not answered within this time kills the child and rejects; default 60 s. */
  requestTimeoutMs?: number;
}

/** Why a holder request failed: the child answered with an error, exited first, or did not answer in time. */
export type HolderFailure = "refused" | "exited" | "timeout";

/** HolderError is a request the child refused or could not finish; `code` etc. come from its SysError. */
export class HolderError extends Error {
  override readonly name = "HolderError";
  readonly reason: HolderFailure;
  /** errno name ("EADDRINUSE") when a system call failed. */
  readonly code: string | undefined;
  readonly errno: number | undefined;
  readonly syscall: string | undefined;

  constructor(pid: number | undefined, op: string, error: WireError, reason: HolderFailure = "refused") {
    super(`holder ${pid ?? "(not started)"} ${op}: ${error.message}`);
    this.reason = reason;
    this.code = error.code;
    this.errno = error.errno;
    this.syscall = error.syscall;
  }
}

const MAIN = fileURLToPath(new URL("./holder-main.js", import.meta.url));
const STOP_TIMEOUT_MS = 5000;
const live = new Set<ChildProcess>();
let exitHookInstalled = false;

/** killAllHolders SIGKILLs every holder child still running; installed as a process "exit" hook. */
export function killAllHolders(): void {
  for (const child of live) child.kill("SIGKILL");
}

interface Waiter {
  op: string;
  resolve: (value: unknown) => void;
  reject: (err: Error) => void;
  timer: NodeJS.Timeout;
}

type Refable = { ref(): void; unref(): void };

/**
 * Holder controls one holder child. Start it with `Holder.start`, stop it with `stop()` (or
 * `await using`). Requests are answered in order; each rejects with HolderError on failure.
 */
export class Holder {
  /** The child's pid. */
  readonly pid: number;
  /** Inode of the network namespace the child entered (compare with statSync(path).ino). */
  readonly netnsInode: number;
  private readonly waiters = new Map<number, Waiter>();
  private seq = 0;
  private exited = false;
  private readonly exit: Promise<void>;

  private constructor(
    private readonly child: ChildProcess,
    hello: HolderHello,
    private readonly timeoutMs: number,
    exit: Promise<void>,
  ) {
    this.pid = hello.pid;
    this.netnsInode = hello.netnsInode;
    this.exit = exit;
  }

  /**
   * start spawns a holder child with plain `node`, waits until it has entered `netnsPath` and
   * returns its handle. Rejects with HolderError when the namespace cannot be entered.
   */
  static async start(options: HolderOptions = {}): Promise<Holder> {
    if (!exitHookInstalled) {
      process.on("exit", killAllHolders);
      exitHookInstalled = true;
    }
    const args = ["--enable-source-maps", MAIN, ...(options.netnsPath ? [options.netnsPath] : [])];
    const child = spawn(process.execPath, args, { stdio: ["pipe", "pipe", "inherit"] });
    live.add(child);
    let holder: Holder | undefined;
    const exit = new Promise<void>((resolve) => {
      // "close", not "exit": it comes after the last line of stdout, so no reply is lost.
      child.once("close", (code, signal) => {
        live.delete(child);
        holder?.onExit(`exited (code ${code}, signal ${signal})`);
        resolve();
      });
    });
    const lines = createInterface({
      input: child.stdout as NodeJS.ReadableStream,
      crlfDelay: Number.POSITIVE_INFINITY,
    });
    const first = await new Promise<HolderReply>((resolve, reject) => {
      lines.once("line", (line) => resolve(JSON.parse(line) as HolderReply));
      child.once("error", reject);
      void exit.then(() => reject(new Error(`holder child ${child.pid} exited before it was ready`)));
    });
    if (!first.ok) {
      await exit;
      throw new HolderError(child.pid, "start", first.error);
    }
    holder = new Holder(child, first.result as HolderHello, options.requestTimeoutMs ?? 60_000, exit);
    lines.on("line", (line) => holder?.onReply(JSON.parse(line) as HolderReply));
    holder.idle();
    return holder;
  }

  /**
   * open creates `count` sockets as `spec` says, in one round trip, and returns their records
   * (two per pair or connection: client first). All or nothing: a failure closes the batch.
   */
  open(spec: SocketSpec, count = 1): Promise<HeldSocket[]> {
    return this.request({ op: "open", spec, count }) as Promise<HeldSocket[]>;
  }

  /** poll returns, per socket, the errno of a recv(2) with MSG_DONTWAIT: 0 or EAGAIN (11) alive, ECONNABORTED (103) destroyed. */
  poll(sockets: readonly SocketRef[]): Promise<number[]> {
    return this.request({ op: "poll", ids: idsOf(sockets) }) as Promise<number[]>;
  }

  /** send returns, per socket, the errno of a 1-byte send(2) without address: 0 sent, EDESTADDRREQ (89) after a UDP destroy. */
  send(sockets: readonly SocketRef[]): Promise<number[]> {
    return this.request({ op: "send", ids: idsOf(sockets) }) as Promise<number[]>;
  }

  /**
   * waitFor resolves when every socket's recv has reported `errnoName` ("ECONNABORTED"), polled
   * inside the child; rejects after `timeoutMs` with a message listing the sockets that did not.
   * The kernel reports a socket error once: an error an earlier poll consumed still counts.
   */
  waitFor(sockets: readonly SocketRef[], errnoName: string, timeoutMs = 5000): Promise<void> {
    return this.request(
      { op: "waitFor", ids: idsOf(sockets), errno: errnoName, deadlineMs: timeoutMs },
      timeoutMs,
    ) as Promise<void>;
  }

  /** close closes the given sockets in the child. */
  async close(sockets: readonly SocketRef[]): Promise<void> {
    await this.request({ op: "close", ids: idsOf(sockets) });
  }

  /** stop closes every socket and ends the child, killing it when it does not exit in time. Idempotent. */
  async stop(): Promise<void> {
    if (this.exited) return;
    const answer = this.request({ op: "stop" }, STOP_TIMEOUT_MS).then(
      () => undefined,
      (err: unknown) => err,
    );
    const timer = setTimeout(() => this.child.kill("SIGKILL"), 2 * STOP_TIMEOUT_MS);
    this.child.ref();
    await this.exit;
    clearTimeout(timer);
    const failure = await answer;
    if (failure instanceof HolderError && failure.reason === "refused") throw failure;
  }

  /** Symbol.asyncDispose stops the holder, for `await using holder = await Holder.start()`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  private request(body: DistributiveOmit<HolderRequest, "seq">, extraMs = 0): Promise<unknown> {
    if (this.exited) {
      return Promise.reject(new HolderError(this.pid, body.op, { message: "holder has exited" }, "exited"));
    }
    const seq = ++this.seq;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.child.kill("SIGKILL");
        const message = `no answer within ${this.timeoutMs + extraMs} ms; killed`;
        this.settle(seq, { seq, ok: false, error: { message } }, "timeout");
      }, this.timeoutMs + extraMs);
      this.waiters.set(seq, { op: body.op, resolve, reject, timer });
      if (this.waiters.size === 1) this.busy();
      (this.child.stdin as NodeJS.WritableStream).write(`${JSON.stringify({ ...body, seq })}\n`);
    });
  }

  private onReply(reply: HolderReply): void {
    this.settle(reply.seq, reply);
  }

  private settle(seq: number, reply: HolderReply, reason: HolderFailure = "refused"): void {
    const w = this.waiters.get(seq);
    if (!w) return;
    this.waiters.delete(seq);
    clearTimeout(w.timer);
    if (this.waiters.size === 0) this.idle();
    if (reply.ok) w.resolve(reply.result);
    else w.reject(new HolderError(this.pid, w.op, reply.error, reason));
  }

  private onExit(how: string): void {
    this.exited = true;
    for (const seq of [...this.waiters.keys()]) {
      this.settle(seq, { seq, ok: false, error: { message: how } }, "exited");
    }
  }

  /** While a request is pending the child keeps the event loop alive; idle, it does not hold the test open. */
  private busy(): void {
    this.child.ref();
    (this.child.stdout as unknown as Refable).ref();
    (this.child.stdin as unknown as Refable).ref();
  }

  private idle(): void {
    this.child.unref();
    (this.child.stdout as unknown as Refable).unref();
    (this.child.stdin as unknown as Refable).unref();
  }
}

type DistributiveOmit<T, K extends PropertyKey> = T extends unknown ? Omit<T, K> : never;

function idsOf(sockets: readonly SocketRef[]): number[] {
  return sockets.map((s) => (typeof s === "number" ? s : s.id));
}
