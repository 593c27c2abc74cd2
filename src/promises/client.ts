/**
 * The caller's side of sockdiag/promises: one worker per process, started by the first call, kept
 * referenced only while a call or a chunk is awaited (an idle worker never keeps the process alive),
 * and replaced by a fresh one if it ends. Each call carries its own abort flag, shared with the
 * worker, which checks it before every request it would send.
 */
import { existsSync } from "node:fs";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { NamespaceFailure } from "../netns/index.js";
import { NetNS } from "../netns/index.js";
import { AbortError } from "../run/index.js";
import { MisuseError } from "../sys/errors.js";
import type { CallMap, CallName, SentArgs, StreamMap, StreamName } from "./ops.js";
import { type Packed, pack, transferOf, unpack } from "./pack.js";
import type { Reply, ToMain, ToWorker } from "./protocol.js";
import { isCloneError, unsendableAnswer, unsendableArgument } from "./sendable.js";
import { readChunk, type SocketChunk, type StreamItem, yieldTurn } from "./wire.js";

type Fn = (...args: unknown[]) => unknown;

/** A caller's function the worker may call, and its name in the call's arguments ("predicate"). */
interface Callback {
  fn: Fn;
  name: string;
}

interface Pending {
  callbacks: Callback[];
  /** Stops telling the worker about the caller's signal. */
  release?: () => void;
  signal?: AbortSignal | undefined;
  onChunk(chunk: SocketChunk, met: Met, done: boolean): void;
  resolve(value: unknown): void;
  reject(err: unknown): void;
}

/** What a stream met since its last chunk: namespaces that failed, and notes (no conntrack there). */
interface Met {
  failures: NamespaceFailure[];
  notes: unknown[];
}

/** Chunks of a stream decoded ahead of the consumer, at most: back-pressure beyond that. */
const HIGH_WATER_MARK = 2;

export class WorkerClient {
  #worker: Worker | undefined;
  #reply: MessagePort | undefined;
  #replied: Int32Array | undefined;
  readonly #pending = new Map<number, Pending>();
  /** Calls and pulls awaited: the worker is referenced while there is one. */
  #active = 0;
  #next = 1;

  /** Run `op` in the worker; its sockets go to `onChunk` as they come. */
  call<K extends CallName>(
    op: K,
    args: SentArgs<CallMap[K]["args"]>,
    signal: AbortSignal | undefined,
    onChunk?: Pending["onChunk"],
  ): Promise<CallMap[K]["result"]> {
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(new AbortError(signal));
      // Packed before anything is registered: arguments that cannot go reject the call, and leave
      // no pending call behind to keep the worker referenced.
      const callbacks: Callback[] = [];
      const packed = this.#pack(args, callbacks);
      const id = this.#next++;
      const [abort, release] = abortFlag(signal);
      this.#activate(1);
      const finish = () => {
        this.#pending.delete(id);
        release();
        this.#activate(-1);
      };
      this.#pending.set(id, {
        callbacks,
        signal,
        onChunk: onChunk ?? (() => {}),
        resolve: (v) => {
          finish();
          // What the worker's calls[op] returned, rebuilt from its structured clone (pack.ts).
          resolve(v as CallMap[K]["result"]);
        },
        reject: (e) => {
          finish();
          reject(e);
        },
      });
      try {
        this.#send({ t: "call", id, op, args: packed, abort });
      } catch (err) {
        this.#pending.get(id)?.reject(err);
      }
    });
  }

  /** Open a stream of sockets or entries in the worker; the consumer pulls it chunk by chunk. */
  open<K extends StreamName>(
    op: K,
    args: SentArgs<StreamMap[K]["args"]>,
    signal: AbortSignal | undefined,
  ): ChunkStream<StreamMap[K]["item"], StreamMap[K]["note"]> {
    return new ChunkStream(this, op, args, signal);
  }

  /** @internal Start a stream: chunks go to `pending.onChunk`, the end to resolve/reject. */
  startStream(
    op: StreamName,
    args: unknown[],
    signal: AbortSignal | undefined,
    pending: Omit<Pending, "callbacks">,
  ): number {
    const callbacks: Callback[] = [];
    const packed = this.#pack(args, callbacks);
    const id = this.#next++;
    const [abort, release] = abortFlag(signal);
    this.#pending.set(id, { ...pending, callbacks, release, signal });
    this.#activate(1);
    try {
      this.#send({ t: "open", id, op, args: packed, abort });
    } catch (err) {
      this.#pending.delete(id);
      release();
      this.#activate(-1);
      throw err;
    }
    return id;
  }

  /** @internal Ask for a stream's next chunk. */
  pull(id: number): void {
    this.#activate(1);
    this.#worker?.postMessage({ t: "pull", id } satisfies ToWorker);
  }

  /** @internal A stream's chunk arrived: one awaited thing fewer. */
  received(): void {
    this.#activate(-1);
  }

  /** @internal End a stream early. */
  closeStream(id: number, outstanding: boolean): void {
    const p = this.#pending.get(id);
    if (!p) return;
    this.#pending.delete(id);
    p.release?.();
    if (outstanding) this.#activate(-1);
    this.#worker?.postMessage({ t: "close", id } satisfies ToWorker);
  }

  #pack(args: unknown[], callbacks: Callback[]): Packed {
    return pack(args, {
      // Named by its place in its argument ("logger.info"), not by the argument's index.
      fn: (fn, path) => callbacks.push({ fn, name: path.replace(/^\d+\.?/, "") || "callback" }) - 1,
      netns: (v) =>
        v instanceof NetNS ? { fd: v.fd, dev: v.dev, ino: v.ino, name: v.name, label: v.label } : undefined,
    });
  }

  /** Post a call; an argument that cannot go (see sendable.ts) is a QueryError naming it. */
  #send(message: ToWorker & { args: Packed }): void {
    try {
      this.#start().postMessage(message, transferOf(message.args));
    } catch (err) {
      if (!isCloneError(err)) throw err;
      const args = message.args.value as unknown[];
      for (const [i, arg] of args.entries()) {
        const refusal = unsendableArgument(arg, `argument ${i + 1}`);
        if (refusal) throw refusal;
      }
      throw err;
    }
  }

  #activate(delta: number): void {
    const before = this.#active;
    this.#active += delta;
    if (before === 0 && this.#active > 0) this.#worker?.ref();
    else if (before > 0 && this.#active === 0) this.#worker?.unref();
  }

  #start(): Worker {
    if (this.#worker) return this.#worker;
    const { port1, port2 } = new MessageChannel();
    const replyFlag = new SharedArrayBuffer(4);
    const worker = new Worker(workerScript(), {
      workerData: { replyPort: port2, replyFlag },
      transferList: [port2],
    });
    if (this.#active === 0) worker.unref();
    port1.unref();
    worker.on("message", (m: ToMain) => this.#onMessage(m));
    worker.on("error", (err) => this.#ended(worker, err));
    worker.on("exit", (code) =>
      this.#ended(worker, new Error(`sockdiag/promises: the worker thread ended (exit code ${code})`)),
    );
    this.#worker = worker;
    this.#reply = port1;
    this.#replied = new Int32Array(replyFlag);
    return worker;
  }

  /** The worker ended: every call still waiting on it fails; the next call starts a new one. */
  #ended(worker: Worker, err: Error): void {
    if (this.#worker !== worker) return;
    this.#worker = undefined;
    this.#reply?.close();
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#active = 0;
    for (const p of pending) p.reject(err);
  }

  #onMessage(m: ToMain): void {
    const p = this.#pending.get(m.id);
    if (m.t === "callback") {
      void this.#answer(p, m.fn, m.args);
      return;
    }
    if (!p) return;
    const hooks = { fn: (n: number) => p.callbacks[n]!.fn };
    if (m.t === "chunk") {
      if (m.done) {
        this.#pending.delete(m.id);
        p.release?.();
      }
      const met = m.met ? (unpack(m.met, hooks) as Met) : { failures: [], notes: [] };
      p.onChunk(m.chunk, met, Boolean(m.done));
    } else if (m.t === "done") p.resolve(unpack(m.result, hooks));
    else {
      this.#pending.delete(m.id);
      p.release?.();
      const err = unpack(m.error, hooks);
      // The worker saw only the flag: the signal's reason is here.
      if (err instanceof AbortError && err.cause === undefined && p.signal?.reason !== undefined)
        Object.defineProperty(err, "cause", { value: p.signal.reason, configurable: true, writable: true });
      p.reject(err);
    }
  }

  /** Run a caller's function the worker called, and wake the worker with its answer. */
  async #answer(p: Pending | undefined, fn: number, args: Packed): Promise<void> {
    const callback = p?.callbacks[fn];
    let answer: [what: "returned" | "threw", value: unknown];
    try {
      if (!callback) throw new MisuseError("sockdiag/promises: callback of a finished call");
      const hooks = { fn: (n: number) => p!.callbacks[n]!.fn };
      answer = ["returned", await callback.fn(...(unpack(args, hooks) as unknown[]))];
    } catch (err) {
      answer = ["threw", err];
    }
    this.#wake(callback?.name ?? "callback", ...answer);
  }

  /**
   * Send a callback's answer and wake the worker. An answer that cannot go (a function, a Symbol)
   * is replaced by an error naming the callback: to the worker, the callback threw it.
   */
  #wake(name: string, what: "returned" | "threw", value: unknown): void {
    const packed = pack(value);
    const reply: Reply = what === "returned" ? { result: packed } : { error: packed };
    try {
      this.#reply?.postMessage(reply, transferOf(packed));
    } catch (err) {
      if (!isCloneError(err)) throw err;
      const error = pack(unsendableAnswer(name, what, packed.value));
      this.#reply?.postMessage({ error } satisfies Reply, transferOf(error));
    }
    Atomics.store(this.#replied!, 0, 1);
    Atomics.notify(this.#replied!, 0);
  }
}

/** A flag the worker reads, set when `signal` aborts; and how to stop listening to the signal. */
function abortFlag(signal: AbortSignal | undefined): [SharedArrayBuffer, () => void] {
  const buf = new SharedArrayBuffer(4);
  if (!signal) return [buf, () => {}];
  const onAbort = () => Atomics.store(new Int32Array(buf), 0, 1);
  signal.addEventListener("abort", onAbort, { once: true });
  return [buf, () => signal.removeEventListener("abort", onAbort)];
}

/**
 * ChunkStream is one pass over a worker stream: chunks are decoded as they arrive, at most
 * HIGH_WATER_MARK ahead of the consumer, and closing it releases the worker's side at once.
 */
export class ChunkStream<T extends StreamItem = StreamItem, N = unknown> {
  readonly failures: NamespaceFailure[] = [];
  readonly notes: N[] = [];
  /** Resolves when the worker's side is open (its first chunk came), rejects if it could not open. */
  readonly ready: Promise<void>;
  #opened!: (err?: unknown) => void;
  #queue: SocketChunk[] = [];
  #id: number;
  #outstanding = true;
  #done = false;
  #error: unknown;
  #wake: (() => void) | undefined;

  constructor(
    private readonly client: WorkerClient,
    op: StreamName,
    args: unknown[],
    private readonly signal: AbortSignal | undefined,
  ) {
    if (signal?.aborted) throw new AbortError(signal);
    this.ready = new Promise<void>((resolve, reject) => {
      this.#opened = (err) => (err === undefined ? resolve() : reject(err));
    });
    this.ready.catch(() => {});
    this.#id = client.startStream(op, args, signal, {
      onChunk: (chunk, met, done) => {
        this.#opened();
        this.#outstanding = false;
        client.received();
        this.failures.push(...met.failures);
        // A stream's notes, as its worker side (streams[op]) keeps them.
        this.notes.push(...(met.notes as N[]));
        this.#queue.push(chunk);
        this.#done = done;
        this.#refill();
        this.#wake?.();
      },
      resolve: () => {},
      reject: (err) => {
        this.#opened(err);
        if (this.#outstanding) client.received();
        this.#outstanding = false;
        this.#error = err;
        this.#done = true;
        this.#wake?.();
      },
    });
  }

  /** The next chunk of items, or undefined at the end. Throws what the worker threw, or AbortError. */
  async next(): Promise<T[] | undefined> {
    for (;;) {
      if (this.signal?.aborted) throw new AbortError(this.signal);
      const chunk = this.#queue.shift();
      if (chunk) {
        this.#refill();
        // Each chunk is decoded in a turn of its own: other callbacks run in between.
        await yieldTurn();
        const items: T[] = [];
        // A stream's chunks hold the items its worker side (streams[op]) yields.
        readChunk(chunk, (item) => items.push(item as T));
        return items;
      }
      if (this.#error !== undefined) throw this.#error;
      if (this.#done) return undefined;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
      this.#wake = undefined;
    }
  }

  /** Release the worker's side (its netlink sockets and handles) now. */
  close(): void {
    this.client.closeStream(this.#id, this.#outstanding);
    this.#outstanding = false;
    this.#done = true;
  }

  #refill(): void {
    if (this.#done || this.#outstanding || this.#queue.length >= HIGH_WATER_MARK) return;
    this.#outstanding = true;
    this.client.pull(this.#id);
  }
}

export const client = new WorkerClient();

let script: URL | undefined;

/**
 * The worker thread's script: the one-file bundle of worker.js that the package's build makes
 * (dist/bundle/sockdiag-worker.cjs), which a thread starts in about half the time of the ~100
 * modules worker.js imports; worker.js itself where the build made none.
 */
function workerScript(): URL {
  if (!script) {
    const bundled = new URL("../../bundle/sockdiag-worker.cjs", import.meta.url);
    script = existsSync(bundled) ? bundled : new URL("./worker.js", import.meta.url);
  }
  return script;
}
