/**
 * Reflector: client-go's reflector (tools/cache/reflector.go) for one resource, its seams injected —
 * a list/watch source, a store, an observer, a clock and a back-off. It lists (in pages, each item
 * handed to the store's replacement as it comes, the whole applied only once the last page came),
 * then watches from the list's resourceVersion with bookmarks; a watch that ends is started again
 * from the last resourceVersion seen; "410 Gone" lists again. It keeps no objects.
 *
 * Every request can fail, hang or go silent, so:
 * - every retry, list or watch, whatever the error, waits for the back-off;
 * - each watch asks the server to end it (`timeoutSeconds` drawn between the watch timeout and twice
 *   it, as client-go draws 5 to 10 minutes), and is given up when it has sent nothing for longer
 *   than that plus a margin (a stuck proxy keeps a connection open and silent);
 * - each list page is given up after the list timeout.
 */
import { ApiStatusError, type WatchEvent } from "./kube-api.js";
import { type Clock, systemClock } from "./removals.js";

/** What a list asks: `resourceVersion` absent for "most recent"; `limit` absent for all at once. */
export interface ListRequest {
  resourceVersion?: string;
  limit?: number;
  continue?: string;
}

/** A list answer's metadata; its items went to `onItem` as they came. */
export interface ListAnswer {
  resourceVersion: string;
  continue: string | undefined;
}

export interface WatchRequest {
  resourceVersion: string;
  timeoutSeconds: number;
}

/** The API server, as the reflector uses it (kube-api.ts; a fake in unit tests). */
export interface ListWatchSource {
  /** One list page: each item to `onItem` as it is read. Rejects on any error (abort included). */
  list(request: ListRequest, signal: AbortSignal, onItem: (item: unknown) => void): Promise<ListAnswer>;
  /**
   * A watch with bookmarks: `onOpen` once the server answered 200, each event to `onEvent` as it
   * comes (an ERROR event rejects instead). Resolves when the server ends the stream.
   */
  watch(
    request: WatchRequest,
    signal: AbortSignal,
    onEvent: (event: WatchEvent) => void,
    onOpen: () => void,
  ): Promise<void>;
}

/** A whole new state being read: nothing is applied until `commit`. */
export interface Replacement {
  add(object: unknown): void;
  /** The state came whole: replace what was known with it (the watch waits for it). */
  commit(count: number): Promise<void>;
  /** The state in progress was given up: drop what was staged. */
  abandon(): void;
}

/** Where the reflector puts what it reads (client-go's Store). */
export interface ReflectorStore {
  /** Start reading a whole new state (a list). */
  replacement(): Replacement;
  /** ADDED or MODIFIED by watch. */
  put(object: unknown): void;
  /** DELETED by watch. */
  delete(object: unknown): void;
}

/** Told of the reflector's requests, for metrics and logs. */
export interface ReflectorObserver {
  /** A watch was answered 200: events follow. */
  watchOpened(): void;
  /** A failed list or watch; the next attempt starts after `delayMs`. */
  failed(err: unknown, step: "list" | "watch", delayMs: number): void;
}

/** How long to wait before the next attempt after a failure. */
export interface Backoff {
  next(): number;
  /** The requests work again. */
  reset(): void;
}

export interface ReflectorOptions {
  /** Items per list page. Default 500, as client-go's pager. */
  pageSize?: number;
  /** The watch timeout T: each watch asks for T to 2T, and is given up after its ask plus a margin. Default 300,000. */
  watchTimeoutMs?: number;
  /** A list page that has not come in this long is given up. Default min(60,000, watchTimeoutMs). */
  listTimeoutMs?: number;
  /** How long the watch still counts as healthy after its last sign of life while it fails. Default 60,000. */
  staleAfterMs?: number;
  clock?: Clock;
  /** The random source of `timeoutSeconds`. */
  random?: () => number;
}

/** A watch that ends cleanly sooner than this with nothing delivered counts as a failure (client-go). */
const SHORT_WATCH_MS = 1000;

/** A watch or list given up by the agent, with why. */
export class GivenUpError extends Error {
  override readonly name = "GivenUpError";
}

export class Reflector {
  private readonly pageSize: number;
  private readonly watchTimeoutMs: number;
  private readonly listTimeoutMs: number;
  private readonly staleAfterMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;
  private rv = "";
  private failing = false;
  private lastSignOfLife = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly source: ListWatchSource,
    private readonly store: ReflectorStore,
    private readonly observer: ReflectorObserver,
    private readonly backoff: Backoff,
    options: ReflectorOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 500;
    this.watchTimeoutMs = options.watchTimeoutMs ?? 300_000;
    this.listTimeoutMs = options.listTimeoutMs ?? Math.min(60_000, this.watchTimeoutMs);
    this.staleAfterMs = options.staleAfterMs ?? 60_000;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
  }

  /** Start listing and watching in the background; returns at once. */
  start(): void {
    this.running ??= this.run();
  }

  /** Stop: the request in flight is given up; nothing reaches the store after this resolves. */
  async stop(): Promise<void> {
    this.stopper.abort();
    await this.running;
  }

  /** The resourceVersion the next watch resumes from; "" before the first list. */
  resourceVersion(): string {
    return this.rv;
  }

  /**
   * True while lists and watches work: none has failed since the last sign of life (a list that
   * came whole, an event, a bookmark), or the last one came within `staleAfterMs`.
   */
  healthy(): boolean {
    if (this.stopper.signal.aborted) return false;
    return !this.failing || this.clock.now() - this.lastSignOfLife < this.staleAfterMs;
  }

  private async run(): Promise<void> {
    const stopped = this.stopper.signal;
    let needList = true;
    while (!stopped.aborted) {
      let step: "list" | "watch" = needList ? "list" : "watch";
      try {
        if (needList) {
          await this.list();
          needList = false;
        }
        step = "watch";
        if (await this.watchOnce()) continue;
        throw new GivenUpError("the watch ended at once with nothing delivered");
      } catch (err) {
        if (stopped.aborted) return;
        if (err instanceof ApiStatusError && err.expired) needList = true;
        this.failing = true;
        const delayMs = this.backoff.next();
        this.observer.failed(err, step, delayMs);
        await this.sleep(delayMs);
      }
    }
  }

  /** One whole list, page by page; the store applies it only once every page came. */
  private async list(): Promise<void> {
    const replacement = this.store.replacement();
    let token: string | undefined;
    let count = 0;
    let rv = "";
    const onItem = (item: unknown) => {
      replacement.add(item);
      count++;
    };
    try {
      do {
        const request: ListRequest = { limit: this.pageSize, ...(token ? { continue: token } : {}) };
        const answer = await this.limited(this.listTimeoutMs, "a list page", (signal) =>
          this.source.list(request, signal, onItem),
        );
        rv = answer.resourceVersion;
        token = answer.continue;
        // Let the event loop serve others between pages.
        await new Promise((resolve) => setImmediate(resolve));
      } while (token !== undefined);
    } catch (err) {
      replacement.abandon();
      throw err;
    }
    await replacement.commit(count);
    this.rv = rv;
    this.signOfLife();
  }

  /**
   * One watch from the current resourceVersion. Resolves true when the server ended it after it
   * delivered something or lasted a while (watch again at once), false when it ended at once with
   * nothing; rejects on every error, and when it went silent.
   */
  private async watchOnce(): Promise<boolean> {
    const askSeconds = Math.max(1, Math.round((this.watchTimeoutMs / 1000) * (1 + this.random())));
    const silenceMs = askSeconds * 1000 + Math.max(1000, this.watchTimeoutMs / 10);
    const started = this.clock.now();
    let delivered = false;
    await this.limited(silenceMs, "a silent watch", (signal, rearm) =>
      this.source.watch(
        { resourceVersion: this.rv, timeoutSeconds: askSeconds },
        signal,
        (event) => {
          rearm();
          this.onEvent(event);
          delivered = true;
        },
        () => this.observer.watchOpened(),
      ),
    );
    return delivered || this.clock.now() - started >= SHORT_WATCH_MS;
  }

  private onEvent({ type, object }: WatchEvent): void {
    if (type === "ADDED" || type === "MODIFIED") this.store.put(object);
    else if (type === "DELETED") this.store.delete(object);
    else if (type !== "BOOKMARK") return;
    const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (typeof rv === "string" && rv !== "") this.rv = rv;
    this.signOfLife();
    this.backoff.reset();
  }

  private signOfLife(): void {
    this.failing = false;
    this.lastSignOfLife = this.clock.now();
  }

  /** Wait `ms` on the clock, or less if the reflector stops. */
  private sleep(ms: number): Promise<void> {
    const stopped = this.stopper.signal;
    return new Promise((resolve) => {
      const done = () => {
        this.clock.clearTimeout(timer);
        stopped.removeEventListener("abort", done);
        resolve();
      };
      const timer = this.clock.setTimeout(done, ms);
      stopped.addEventListener("abort", done, { once: true });
    });
  }

  /**
   * Run `request` with a signal that aborts when the reflector stops or when `limitMs` passes
   * without `rearm()` being called; a request given up for time rejects with GivenUpError.
   */
  private async limited<T>(
    limitMs: number,
    what: string,
    request: (signal: AbortSignal, rearm: () => void) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const onStop = () => controller.abort(this.stopper.signal.reason);
    this.stopper.signal.addEventListener("abort", onStop, { once: true });
    let timer: unknown;
    let timedOut = false;
    const arm = () => {
      this.clock.clearTimeout(timer);
      timer = this.clock.setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, limitMs);
    };
    arm();
    try {
      return await request(controller.signal, arm);
    } catch (err) {
      if (timedOut) throw new GivenUpError(`${what}: nothing came for ${limitMs / 1000} s; given up`);
      throw err;
    } finally {
      this.clock.clearTimeout(timer);
      this.stopper.signal.removeEventListener("abort", onStop);
    }
  }
}
