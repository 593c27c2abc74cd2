/**
 * The caller's side of sockdiag/promises: one worker per process, started by the first call, kept
 * referenced only while a call or a chunk is awaited (an idle worker never keeps the process alive),
 * and replaced by a fresh one if it ends. Each call carries its own abort flag, shared with the
 * worker, which checks it before every request it would send.
 *
 * A caller's callback runs here while the worker waits for its answer. The wait is bounded: a
 * callback still pending when the call aborts, or past the call's `callbackTimeout`, is answered
 * with AbortError or CallbackTimeoutError, which the worker takes as the callback's throw, so the
 * call ends with its report. A worker that then stays silent for the client's `silence` bound is
 * terminated (its calls reject with WorkerStoppedError) and the next call starts a new one.
 */
import { existsSync } from "node:fs";
import { MessageChannel, type MessagePort, Worker } from "node:worker_threads";
import type { NamespaceFailure } from "../netns/index.js";
import { NetNS } from "../netns/index.js";
import { AbortError, PredicateError } from "../run/index.js";
import { ForeignError, MisuseError } from "../sys/errors.js";
import type { CallMap, CallName, SentArgs, StreamMap, StreamName } from "./ops.js";
import { type Packed, pack, transferOf, unpack } from "./pack.js";
import type { Reply, ToMain, ToWorker } from "./protocol.js";
import { isCloneError, unsendableAnswer, unsendableArgument } from "./sendable.js";
import { readChunk, type SocketChunk, type StreamItem, yieldTurn } from "./wire.js";
import { CallbackTimeoutError, WorkerStoppedError } from "./worker-errors.js";

type Fn = (...args: unknown[]) => unknown;

/** What every call of sockdiag/promises takes besides its own options. */
export interface Abortable {
  /**
   * Once aborted, no further request is sent, the batch in flight is finished, a callback still
   * pending is answered with AbortError, and the call rejects with AbortError whose `report`
   * says what was done.
   */
  signal?: AbortSignal | undefined;
  /**
   * How long a callback (predicate, onOutcome, onNamespace, a logger's method) may take to settle,
   * in ms: past it, the worker is answered as if the callback threw CallbackTimeoutError (a
   * predicate's ends the call with PredicateError, others are reported in `callbackErrors`), and
   * so is every later call of that callback in the call. Default 30,000.
   */
  callbackTimeout?: number | undefined;
}

/** The default of Abortable#callbackTimeout. */
const CALLBACK_TIMEOUT_MS = 30_000;

/** The default of the client's `silence` bound: a worker's silence after an abort, at most. */
const SILENCE_MS = 30_000;

/** A caller's function the worker may call, and its name in the call's arguments ("predicate"). */
interface Callback {
  fn: Fn;
  name: string;
  /** Why it is no longer waited for (it outlived a bound): later calls are answered with this. */
  stuck?: Error;
}

/** How a callback settled, for the worker. */
type Answer = [what: "returned" | "threw", value: unknown];

/** A worker thread, with its port and flag for answers to callbacks. */
interface Thread {
  worker: Worker;
  reply: MessagePort;
  replied: Int32Array;
}

interface Pending {
  callbacks: Callback[];
  /** Stops telling the worker about the caller's signal. */
  release?: () => void;
  signal?: AbortSignal | undefined;
  /** Abortable#callbackTimeout. */
  timeout: number;
  /** A call (the worker runs calls one at a time, in order), not a stream. */
  isCall: boolean;
  /** A callback was answered with the abort: the call ends with AbortError, whatever comes next. */
  cutShort?: boolean;
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

/** How a WorkerClient runs its worker: tests put a worker of their own and short bounds. */
export interface WorkerClientOptions {
  /** The worker thread's script. Default: sockdiag's worker (see workerScript). */
  script?: URL;
  /** How long the worker may stay silent while an aborted call waits on it, in ms. Default SILENCE_MS. */
  silence?: number;
}

export class WorkerClient {
  #thread: Thread | undefined;
  readonly #pending = new Map<number, Pending>();
  /** Calls and pulls awaited: the worker is referenced while there is one. */
  #active = 0;
  #next = 1;
  readonly #script: URL | undefined;
  readonly #silenceMs: number;
  /** Armed while the worker runs an aborted call; each message from it starts it again. */
  #silence: NodeJS.Timeout | undefined;
  /** Callbacks of the worker being run here: while one is, the worker waits on this thread. */
  #answering = 0;

  constructor(options: WorkerClientOptions = {}) {
    this.#script = options.script;
    this.#silenceMs = options.silence ?? SILENCE_MS;
  }

  get #worker(): Worker | undefined {
    return this.#thread?.worker;
  }

  /** Run `op` in the worker; its sockets go to `onChunk` as they come. */
  call<K extends CallName>(
    op: K,
    args: SentArgs<CallMap[K]["args"]>,
    control: Abortable | undefined,
    onChunk?: Pending["onChunk"],
  ): Promise<CallMap[K]["result"]> {
    const signal = control?.signal;
    return new Promise((resolve, reject) => {
      if (signal?.aborted) return reject(new AbortError(signal));
      // Packed before anything is registered: arguments that cannot go reject the call, and leave
      // no pending call behind to keep the worker referenced.
      const callbacks: Callback[] = [];
      const packed = this.#pack(args, callbacks);
      const id = this.#next++;
      const [abort, release] = abortFlag(signal, () => this.#watch());
      this.#activate(1);
      const finish = () => {
        this.#pending.delete(id);
        release();
        this.#activate(-1);
      };
      this.#pending.set(id, {
        callbacks,
        signal,
        timeout: control?.callbackTimeout ?? CALLBACK_TIMEOUT_MS,
        isCall: true,
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
    pending: Omit<Pending, "callbacks" | "timeout" | "isCall">,
  ): number {
    const callbacks: Callback[] = [];
    const packed = this.#pack(args, callbacks);
    const id = this.#next++;
    const [abort, release] = abortFlag(signal);
    this.#pending.set(id, {
      ...pending,
      callbacks,
      release,
      signal,
      timeout: CALLBACK_TIMEOUT_MS,
      isCall: false,
    });
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
    if (this.#thread) return this.#thread.worker;
    const { port1, port2 } = new MessageChannel();
    const replyFlag = new SharedArrayBuffer(4);
    const worker = new Worker(this.#script ?? workerScript(), {
      workerData: { replyPort: port2, replyFlag },
      transferList: [port2],
    });
    if (this.#active === 0) worker.unref();
    port1.unref();
    const thread: Thread = { worker, reply: port1, replied: new Int32Array(replyFlag) };
    worker.on("message", (m: ToMain) => this.#onMessage(thread, m));
    worker.on("error", (err) => this.#ended(worker, () => err));
    worker.on("exit", (code) =>
      this.#ended(worker, () => new Error(`sockdiag/promises: the worker thread ended (exit code ${code})`)),
    );
    this.#thread = thread;
    return worker;
  }

  /** The worker ended: every call still waiting on it fails (`errorOf`); the next call starts a new one. */
  #ended(worker: Worker, errorOf: (p: Pending) => unknown): void {
    if (this.#worker !== worker) return;
    this.#thread?.reply.close();
    this.#thread = undefined;
    clearTimeout(this.#silence);
    this.#silence = undefined;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const p of pending) p.reject(errorOf(p));
    // Nothing is awaited from this worker any more, whatever the rejections counted down.
    this.#active = 0;
  }

  /** Whether the call the worker runs now (the oldest pending one) was aborted. */
  #runningAborted(): boolean {
    for (const p of this.#pending.values()) if (p.isCall) return p.signal?.aborted ?? false;
    return false;
  }

  /**
   * A call was aborted, or the worker said something: while the call it runs is an aborted one, it
   * has `silence` ms (from now) to say more, or it is stopped. A call still queued behind another
   * is not waited on yet, however long the one before it takes.
   */
  #watch(): void {
    if (!this.#thread || !this.#runningAborted()) {
      clearTimeout(this.#silence);
      this.#silence = undefined;
    } else if (this.#silence) this.#silence.refresh();
    else {
      this.#silence = setTimeout(() => this.#stop(), this.#silenceMs);
      this.#silence.unref();
    }
  }

  /** Terminate a worker silent past the bound; its calls reject with WorkerStoppedError. */
  #stop(): void {
    const worker = this.#worker;
    if (!worker) return;
    // Waiting for a callback of ours (bounded by its own timeout) is not the worker's silence.
    if (this.#answering > 0) {
      this.#silence?.refresh();
      return;
    }
    this.#ended(
      worker,
      (p) =>
        new WorkerStoppedError(this.#silenceMs, p.signal?.aborted ? new AbortError(p.signal) : undefined),
    );
    void worker.terminate();
  }

  #onMessage(thread: Thread, m: ToMain): void {
    if (thread !== this.#thread) return;
    this.#handle(thread, m);
    this.#watch();
  }

  #handle(thread: Thread, m: ToMain): void {
    const p = this.#pending.get(m.id);
    if (m.t === "callback") {
      void this.#answer(thread, p, m.fn, m.args);
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
    } else if (m.t === "done") {
      const result = unpack(m.result, hooks);
      if (p.cutShort) p.reject(new AbortError(p.signal, result));
      else p.resolve(result);
    } else {
      this.#pending.delete(m.id);
      p.release?.();
      let err = unpack(m.error, hooks);
      // A predicate answered with the abort ended the run: the call was aborted, and says so.
      if (p.cutShort && err instanceof PredicateError) err = new AbortError(p.signal, err.report);
      // The worker saw only the flag: the signal's reason is here.
      if (err instanceof AbortError && err.cause === undefined && p.signal?.reason !== undefined)
        Object.defineProperty(err, "cause", { value: p.signal.reason, configurable: true, writable: true });
      p.reject(err);
    }
  }

  /** Run a caller's function the worker called, and wake the worker with its answer. */
  async #answer(thread: Thread, p: Pending | undefined, fn: number, args: Packed): Promise<void> {
    const callback = p?.callbacks[fn];
    const answer: Answer =
      p && callback
        ? await this.#settle(p, callback, args)
        : ["threw", new MisuseError("sockdiag/promises: callback of a finished call")];
    this.#wake(thread, callback?.name ?? "callback", ...answer);
  }

  /** settle(), counted in #answering while it runs. */
  async #settle(p: Pending, callback: Callback, args: Packed): Promise<Answer> {
    this.#answering++;
    try {
      return await settle(p, callback, args);
    } finally {
      this.#answering--;
    }
  }

  /**
   * Send a callback's answer and wake the worker. An answer that cannot go (a function, a Symbol,
   * a getter that throws) is replaced by an error naming the callback: to the worker, the callback
   * threw it.
   */
  #wake(thread: Thread, name: string, what: Answer[0], value: unknown): void {
    try {
      const packed = pack(value);
      const reply: Reply = what === "returned" ? { result: packed } : { error: packed };
      thread.reply.postMessage(reply, transferOf(packed));
    } catch (err) {
      let refusal: Error;
      try {
        refusal = isCloneError(err) ? unsendableAnswer(name, what, value) : new ForeignError(err);
      } catch (inner) {
        refusal = new ForeignError(inner);
      }
      const error = pack(refusal);
      thread.reply.postMessage({ error } satisfies Reply, transferOf(error));
    } finally {
      // The worker waits for this whatever happened above.
      Atomics.store(thread.replied, 0, 1);
      Atomics.notify(thread.replied, 0);
    }
  }
}

/**
 * Run `callback` of call `p` with the worker's `args`: how it settled, or, if it is still pending
 * when the call aborts or past the call's timeout, an error for the worker to take as its throw
 * (its late answer is dropped).
 */
function settle(p: Pending, callback: Callback, args: Packed): Promise<Answer> {
  const { signal, timeout } = p;
  if (callback.stuck) return Promise.resolve(["threw", callback.stuck]);
  return new Promise((resolve) => {
    const done = (answer: Answer) => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", onAbort);
      resolve(answer);
    };
    const giveUp = (err: Error) => {
      callback.stuck = err;
      done(["threw", err]);
    };
    const timer = setTimeout(() => giveUp(new CallbackTimeoutError(callback.name, timeout)), timeout);
    const onAbort = () => {
      p.cutShort = true;
      giveUp(new AbortError(signal));
    };
    signal?.addEventListener("abort", onAbort, { once: true });
    const hooks = { fn: (n: number) => p.callbacks[n]!.fn };
    (async () => callback.fn(...(unpack(args, hooks) as unknown[])))().then(
      (value) => done(["returned", value]),
      (err: unknown) => done(["threw", err]),
    );
  });
}

/**
 * A flag the worker reads, set when `signal` aborts (`onAbort` is told too); and how to stop
 * listening to the signal.
 */
function abortFlag(signal: AbortSignal | undefined, onAbort?: () => void): [SharedArrayBuffer, () => void] {
  const buf = new SharedArrayBuffer(4);
  if (!signal) return [buf, () => {}];
  const flag = () => {
    Atomics.store(new Int32Array(buf), 0, 1);
    onAbort?.();
  };
  signal.addEventListener("abort", flag, { once: true });
  return [buf, () => signal.removeEventListener("abort", flag)];
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
