/**
 * The sockdiag/promises worker thread: it runs the synchronous library (calls.ts) on its own thread,
 * so that setns only ever moves this thread, under the library's restore discipline, and the
 * caller's event loop never waits on the kernel. Calls run one at a time; sockets go back in chunks.
 * After a failed namespace restore the thread ends itself (the caller starts a fresh one), as Go's
 * netns code lets a thread in the wrong namespace die.
 */
import { type MessagePort, parentPort, receiveMessageOnPort, workerData } from "node:worker_threads";
import type { Socket } from "../diag/socket.js";
import { type NamespaceFailure, NetNS, NetnsError, NetnsRestoreError } from "../netns/index.js";
import { AbortError } from "../run/index.js";
import { type AbortSignalLike, MisuseError } from "../sys/errors.js";
import { type CallContext, calls, streams } from "./calls.js";
import type { CallMap, CallName, StreamMap, StreamName } from "./ops.js";
import { type Packed, pack, transferOf, unpack } from "./pack.js";
import type { Reply, ToMain, ToWorker } from "./protocol.js";
import { ChunkWriter, type StreamItem } from "./wire.js";

const port = parentPort!;
const { replyPort, replyFlag } = workerData as { replyPort: MessagePort; replyFlag: SharedArrayBuffer };
const replied = new Int32Array(replyFlag);

/** An AbortSignal's state, shared with the caller's thread. */
class SharedAbort implements AbortSignalLike {
  readonly #flag: Int32Array;
  constructor(buf: SharedArrayBuffer) {
    this.#flag = new Int32Array(buf);
  }
  get aborted(): boolean {
    return Atomics.load(this.#flag, 0) !== 0;
  }
}

function post(message: ToMain, transfer: ArrayBuffer[] = []): void {
  port.postMessage(message, transfer);
}

/** Handles opened for a call's arguments, closed when it ends. */
type Opened = NetNS[];

/**
 * A caller's function, called from the worker: the call waits (Atomics.wait: this thread has
 * nothing else to do) until the caller's thread has run it, awaited it if it returned a Promise,
 * and replied.
 */
function callback(id: number, fn: number): (...args: unknown[]) => unknown {
  return (...args: unknown[]) => {
    const packed = pack(args);
    Atomics.store(replied, 0, 0);
    post({ t: "callback", id, fn, args: packed }, transferOf(packed));
    for (;;) {
      Atomics.wait(replied, 0, 0);
      const message = receiveMessageOnPort(replyPort);
      if (message) {
        const reply = message.message as Reply;
        const hooks = { fn: (n: number) => callback(id, n) };
        if (reply.error) throw unpack(reply.error, hooks);
        return unpack(reply.result!, hooks);
      }
      Atomics.store(replied, 0, 0);
    }
  };
}

/**
 * The arguments of a call or stream, rebuilt. The caller's call() or open() typed them by the
 * operation's name; what a caller outside the types sends anyway the library refuses as it would
 * in a sync call.
 */
function unpackArgs<A extends unknown[]>(id: number, args: Packed, opened: Opened): A {
  return unpack(args, {
    fn: (n) => callback(id, n),
    netns: (r) => {
      // The caller's descriptor is the process's: reopen it here, and check it is still that namespace.
      const ns = NetNS.open(`/proc/self/fd/${r.fd as number}`, r.name as string | undefined);
      opened.push(ns);
      if (ns.ino !== r.ino || ns.dev !== r.dev)
        throw new NetnsError(String(r.label), "the handle was closed before the call reached it");
      return ns;
    },
  }) as A;
}

function fail(id: number, err: unknown): void {
  const packed = pack(err);
  post({ t: "fail", id, error: packed }, transferOf(packed));
  if (err instanceof NetnsRestoreError) process.exit(1);
}

function runCall(id: number, op: CallName, args: Packed, abort: SharedArrayBuffer): void {
  const opened: Opened = [];
  const writer = new ChunkWriter();
  const signal = new SharedAbort(abort);
  const sent = () => {
    if (!writer.full) return;
    sendChunk(id, writer);
    if (signal.aborted) throw new AbortError(signal);
  };
  const ctx: CallContext = {
    signal,
    emit(s: Socket) {
      writer.add(s);
      sent();
    },
    emitInetMessage(buf, offset, protocol, netns) {
      writer.addInetMessage(buf, offset, protocol, netns);
      sent();
    },
  };
  try {
    if (!Object.hasOwn(calls, op)) throw new MisuseError(`sockdiag/promises: no call ${op}`);
    const result = run(op, unpackArgs(id, args, opened), ctx);
    if (writer.count > 0) sendChunk(id, writer);
    const packed = pack(result);
    post({ t: "done", id, result: packed }, transferOf(packed));
  } catch (err) {
    fail(id, err);
  } finally {
    for (const ns of opened) ns.close();
  }
}

function run<K extends CallName>(op: K, args: CallMap[K]["args"], ctx: CallContext): CallMap[K]["result"] {
  return calls[op](args, ctx);
}

function sendChunk(id: number, writer: ChunkWriter): void {
  const chunk = writer.take();
  post({ t: "chunk", id, chunk }, [chunk.buf]);
}

/** How long a stream with nothing to send waits before looking again. */
const RETRY_MS = 25;

interface OpenStream {
  iterator: Iterator<StreamItem | null>;
  /** Whether a chunk was sent: the first tells the caller the stream is open, even empty. */
  started: boolean;
  failures: NamespaceFailure[] | undefined;
  notes: unknown[] | undefined;
  /** How many failures and notes went out already. */
  reported: [number, number];
  signal: SharedAbort;
  opened: Opened;
}

const open = new Map<number, OpenStream>();

function openStream(id: number, op: StreamName, args: Packed, abort: SharedArrayBuffer): void {
  const opened: Opened = [];
  try {
    if (!Object.hasOwn(streams, op)) throw new MisuseError(`sockdiag/promises: no stream ${op}`);
    const signal = new SharedAbort(abort);
    const iterable = start(op, unpackArgs(id, args, opened), signal);
    open.set(id, {
      iterator: iterable[Symbol.iterator](),
      started: false,
      failures: iterable.failures,
      notes: iterable.notes,
      reported: [0, 0],
      signal,
      opened,
    });
    pull(id);
  } catch (err) {
    for (const ns of opened) ns.close();
    fail(id, err);
  }
}

function start<K extends StreamName>(op: K, args: StreamMap[K]["args"], signal: SharedAbort) {
  return streams[op](args, { signal });
}

/** Send the stream's next chunk, with the namespace failures and notes met since the last one. */
function pull(id: number): void {
  const s = open.get(id);
  if (!s) return;
  const writer = new ChunkWriter();
  let done = false;
  try {
    if (s.signal.aborted) throw new AbortError(s.signal);
    while (!writer.full) {
      const next = s.iterator.next();
      if (next.done) {
        done = true;
        break;
      }
      if (next.value === null) {
        if (writer.count > 0 || !s.started) break;
        setTimeout(() => pull(id), RETRY_MS);
        return;
      }
      writer.add(next.value);
    }
  } catch (err) {
    close(id);
    fail(id, err);
    return;
  }
  s.started = true;
  const failures = s.failures?.slice(s.reported[0]) ?? [];
  const notes = s.notes?.slice(s.reported[1]) ?? [];
  s.reported = [s.reported[0] + failures.length, s.reported[1] + notes.length];
  const packed = pack({ failures, notes });
  const chunk = writer.take();
  if (done) close(id);
  post({ t: "chunk", id, chunk, met: packed, done }, [chunk.buf, ...transferOf(packed)]);
}

/** End a stream early: the iterator's `finally` blocks close its sockets and handles. */
function close(id: number): void {
  const s = open.get(id);
  if (!s) return;
  open.delete(id);
  try {
    s.iterator.return?.();
  } finally {
    for (const ns of s.opened) ns.close();
  }
}

port.on("message", (m: ToWorker) => {
  if (m.t === "call") runCall(m.id, m.op, m.args, m.abort);
  else if (m.t === "open") openStream(m.id, m.op, m.args, m.abort);
  else if (m.t === "pull") pull(m.id);
  else close(m.id);
});
