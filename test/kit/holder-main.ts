/**
 * The socket holder child: `node dist/test/kit/holder-main.js [NETNS_PATH]`. It first moves its main
 * thread into the network namespace file given (setns(2), before any socket exists), then serves
 * HolderRequests from stdin, one JSON line each, answering each with one JSON line on stdout, in order.
 * When stdin closes (the parent exited or died) it closes every socket and exits: it never outlives
 * its parent. Started and driven only by Holder (holder.ts).
 */
import { closeSync, openSync, statSync } from "node:fs";
import { createInterface } from "node:readline";
import { CLONE_NEWNET, SysError, setns } from "../../src/sys/index.js";
import { Opener } from "./holder-open.js";
import type { HolderHello, HolderReply, HolderRequest, WireError } from "./holder-protocol.js";
import { SocketTable } from "./holder-table.js";

function reply(r: HolderReply): void {
  // Writes to a pipe are synchronous on Linux, so a reply is out before process.exit.
  process.stdout.write(`${JSON.stringify(r)}\n`);
}

/** wireError keeps what a SysError, or node's own errno error (from fs), says about the failure. */
function wireError(err: unknown): WireError {
  if (err instanceof SysError) {
    return { message: err.message, code: err.code, errno: err.errno, syscall: err.syscall };
  }
  const e = err as NodeJS.ErrnoException;
  const out: WireError = { message: e instanceof Error ? e.message : String(err) };
  if (typeof e?.code === "string") out.code = e.code;
  if (typeof e?.errno === "number") out.errno = Math.abs(e.errno);
  if (typeof e?.syscall === "string") out.syscall = e.syscall;
  return out;
}

/** enterNetns moves the main thread into the namespace at `path` for the rest of the child's life. */
function enterNetns(path: string): void {
  const fd = openSync(path, "r");
  try {
    setns(fd, CLONE_NEWNET);
  } catch (err) {
    if (err instanceof Error) err.message = `${err.message} entering ${path}`;
    throw err;
  } finally {
    closeSync(fd);
  }
}

const table = new SocketTable();
const opener = new Opener(table);

async function serve(req: HolderRequest): Promise<unknown> {
  switch (req.op) {
    case "open":
      return opener.open(req.spec, req.count);
    case "poll":
      return table.poll(req.ids);
    case "send":
      return table.send(req.ids);
    case "close":
      table.close(req.ids);
      return null;
    case "waitFor":
      await table.waitFor(req.ids, req.errno, req.deadlineMs);
      return null;
    case "stop":
      table.closeAll();
      return null;
    default:
      throw new Error(`unknown op ${JSON.stringify((req as { op: unknown }).op)}`);
  }
}

function main(): void {
  const netnsPath = process.argv[2];
  try {
    if (netnsPath) enterNetns(netnsPath);
  } catch (err) {
    reply({ seq: 0, ok: false, error: wireError(err) });
    process.exit(1);
  }
  const hello: HolderHello = { pid: process.pid, netnsInode: statSync("/proc/thread-self/ns/net").ino };
  reply({ seq: 0, ok: true, result: hello });

  // Requests run one at a time, in arrival order, so replies come back in request order.
  let queue = Promise.resolve();
  const lines = createInterface({ input: process.stdin, crlfDelay: Number.POSITIVE_INFINITY });
  lines.on("line", (line) => {
    const req = JSON.parse(line) as HolderRequest;
    queue = queue.then(async () => {
      try {
        reply({ seq: req.seq, ok: true, result: await serve(req) });
      } catch (err) {
        reply({ seq: req.seq, ok: false, error: wireError(err) });
      }
      if (req.op === "stop") process.exit(0);
    });
  });
  lines.on("close", () => {
    // The parent is gone: nobody waits for pending replies.
    table.closeAll();
    process.exit(0);
  });
}

main();
