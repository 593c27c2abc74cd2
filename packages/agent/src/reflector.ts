/**
 * Reflector: client-go's reflector (tools/cache/reflector.go) for one resource, its seams injected —
 * a list/watch source, a store, an observer, a clock and a back-off. It reads the whole state (each
 * item handed to the store's replacement as it comes, the whole applied only once it all came),
 * then watches from its resourceVersion with bookmarks; a watch that ends is started again from the
 * last resourceVersion seen; "410 Gone" reads the whole state again. It keeps no objects.
 *
 * The whole state comes, as client-go's reflector asks for it, from the API server's watch cache
 * wherever it can, not from etcd:
 * - by a streaming list where the server offers it (KEP-3157): a watch that sends the state first
 *   and marks its end with a bookmark annotated `k8s.io/initial-events-end`, then goes on; a server
 *   that refuses it (an error status other than 410, 429 and 5xx) or ends the stream before the
 *   bookmark is listed instead from then on;
 * - else by a list: the first at resourceVersion "0" (any version: the watch cache answers it
 *   whole, ignoring the limit), a relist at the last version synced (not older than it: also the
 *   cache, asked unpaged since the cache ignores paging there); only when the server answers 410
 *   (or "too large resource version") to that, a consistent list (no resourceVersion: etcd,
 *   paged), at once.
 *
 * Every request can fail, hang or go silent, so:
 * - every retry, list or watch, whatever the error, waits for the back-off (a watch the server
 *   ended, or a consistent list after a 410, follows at once);
 * - each watch asks the server to end it (`timeoutSeconds` drawn between the watch timeout and twice
 *   it, as client-go draws 5 to 10 minutes), and is given up when it has sent nothing for longer
 *   than that plus a margin (a stuck proxy keeps a connection open and silent);
 * - a list answer is given up when no item of it came for the list timeout.
 */

import { type Clock, systemClock } from "./clock.js";
import { ApiStatusError, isInitialEventsEnd, type WatchEvent } from "./kube-api.js";

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
  /** A streaming list: the state not older than `resourceVersion` first, up to the bookmark that ends it. */
  sendInitialEvents?: boolean;
}

/** The API server, as the reflector uses it (kube-api.ts; a fake in unit tests). */
export interface ListWatchSource {
  /** One list page: each item to `onItem` as it is read. Rejects on any error (abort included). */
  list(request: ListRequest, signal: AbortSignal, onItem: (item: unknown) => void): Promise<ListAnswer>;
  /**
   * A watch with bookmarks: `onOpen` once the server answered 200, each event to `onEvent` as it
   * comes, the next one after the promise it may return (an ERROR event rejects instead).
   * Resolves when the server ends the stream.
   */
  watch(
    request: WatchRequest,
    signal: AbortSignal,
    onEvent: (event: WatchEvent) => void | Promise<void>,
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
  /** The server refused a streaming list, or ended it before the state was whole: lists from now on. */
  streamingRefused(err: unknown): void;
}

/** How long to wait before the next attempt after a failure. */
export interface Backoff {
  next(): number;
}

export interface ReflectorOptions {
  /** Items per list page. Default 500, as client-go's pager. */
  pageSize?: number;
  /** The watch timeout T: each watch asks for T to 2T, and is given up after its ask plus a margin. Default 300,000. */
  watchTimeoutMs?: number;
  /** A list answer with no item for this long is given up. Default min(60,000, watchTimeoutMs). */
  listTimeoutMs?: number;
  /** How long the watch still counts as healthy after its last sign of life while it fails. Default 60,000. */
  staleAfterMs?: number;
  clock?: Clock;
  /** The random source of `timeoutSeconds`. */
  random?: () => number;
  /** Ask for streaming lists (they fall back to lists when refused). Default true. */
  streamingLists?: boolean;
}

/** A watch that ends cleanly sooner than this with nothing delivered counts as a failure (client-go). */
const SHORT_WATCH_MS = 1000;

/** A watch or list given up by the agent, with why. */
export class GivenUpError extends Error {
  override readonly name = "GivenUpError";
}

/** A streaming list the server ended before the bookmark that makes its state whole. */
export class StreamEndedEarlyError extends Error {
  override readonly name = "StreamEndedEarlyError";
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
  /** The last version synced is not available (a list at it was answered 410): list consistently. */
  private rvUnavailable = false;
  /** A list at "0" came in pages: the server has no watch cache here, so relists are paged too. */
  private paginated = false;
  private streaming: boolean;
  private needList = true;
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
    this.streaming = options.streamingLists ?? true;
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
    while (!stopped.aborted) {
      try {
        let watched: boolean | undefined;
        if (this.needList && this.streaming) watched = await this.streamingList();
        if (this.needList) await this.list();
        watched ??= await this.watchOnce(false);
        if (watched) continue;
        throw new GivenUpError("the watch ended at once with nothing delivered");
      } catch (err) {
        if (stopped.aborted) return;
        const step = this.needList ? "list" : "watch";
        if (err instanceof ApiStatusError && err.expired) this.needList = true;
        this.failing = true;
        const delayMs = this.backoff.next();
        this.observer.failed(err, step, delayMs);
        await this.sleep(delayMs);
      }
    }
  }

  /** client-go's relistResourceVersion: "" for a consistent list, "0" for any, else the last synced. */
  private relistResourceVersion(): string {
    if (this.rvUnavailable) return "";
    return this.rv === "" ? "0" : this.rv;
  }

  /** The whole state by list; at once again consistently if the version asked is not available. */
  private async list(): Promise<void> {
    const from = this.relistResourceVersion();
    try {
      await this.listFrom(from);
    } catch (err) {
      if (from === "" || !unavailable(err)) throw err;
      this.rvUnavailable = true;
      await this.listFrom("");
    }
  }

  /** One whole list at `from`, page by page; the store applies it only once every page came. */
  private async listFrom(from: string): Promise<void> {
    const replacement = this.store.replacement();
    // The watch cache ignores the limit at "0" and serves "not older than" lists only without one.
    const limit = from === "" || from === "0" || this.paginated ? this.pageSize : undefined;
    let request: ListRequest = { ...(from ? { resourceVersion: from } : {}), ...(limit ? { limit } : {}) };
    let count = 0;
    let pages = 0;
    let answer: ListAnswer;
    const onItem = (item: unknown) => {
      replacement.add(item);
      count++;
    };
    try {
      for (;;) {
        const asked = request;
        answer = await this.limited(this.listTimeoutMs, "a list answer", (signal, rearm) =>
          this.source.list(asked, signal, (item) => {
            rearm();
            onItem(item);
          }),
        );
        pages++;
        if (answer.continue === undefined) break;
        request = { limit: limit ?? this.pageSize, continue: answer.continue };
        // Let the event loop serve others between pages.
        await new Promise((resolve) => setImmediate(resolve));
      }
    } catch (err) {
      replacement.abandon();
      throw err;
    }
    if (from === "0" && pages > 1) this.paginated = true;
    await replacement.commit(count);
    this.synced(answer.resourceVersion);
  }

  /**
   * The whole state by a streaming list, then its watch on. Resolves as watchOnce does once the
   * state came whole; with `undefined` when the server refused it (`needList` stays: list instead).
   */
  private async streamingList(): Promise<boolean | undefined> {
    try {
      return await this.watchOnce(true);
    } catch (err) {
      if (!this.needList) throw err;
      if (unavailable(err) && !this.rvUnavailable) {
        this.rvUnavailable = true;
        return await this.streamingList();
      }
      if (!refusal(err)) throw err;
      this.streaming = false;
      this.observer.streamingRefused(err);
      return undefined;
    }
  }

  /**
   * One watch from the current resourceVersion (`initial`: a streaming list, its state first).
   * Resolves true when the server ended it after it delivered something or lasted a while (watch
   * again at once), false when it ended at once with nothing; rejects on every error, and when it
   * went silent.
   */
  private async watchOnce(initial: boolean): Promise<boolean> {
    const askSeconds = Math.max(1, Math.round((this.watchTimeoutMs / 1000) * (1 + this.random())));
    const silenceMs = askSeconds * 1000 + Math.max(1000, this.watchTimeoutMs / 10);
    const started = this.clock.now();
    const replacement = initial ? this.store.replacement() : undefined;
    let count = 0;
    let delivered = false;
    const onEvent = (event: WatchEvent, rearm: () => void): Promise<void> | undefined => {
      rearm();
      delivered = true;
      if (!replacement || !this.needList) return this.onEvent(event);
      if (event.type === "ADDED" || event.type === "MODIFIED") {
        replacement.add(event.object);
        count++;
        return undefined;
      }
      if (!isInitialEventsEnd(event)) return undefined;
      return replacement.commit(count).then(() => this.synced(versionOf(event.object)));
    };
    try {
      await this.limited(silenceMs, "a silent watch", (signal, rearm) =>
        this.source.watch(
          {
            resourceVersion: initial ? (this.rvUnavailable ? "" : this.rv) : this.rv,
            timeoutSeconds: askSeconds,
            ...(initial ? { sendInitialEvents: true } : {}),
          },
          signal,
          (event) => onEvent(event, rearm),
          () => this.observer.watchOpened(),
        ),
      );
    } catch (err) {
      if (replacement && this.needList) replacement.abandon();
      throw err;
    }
    if (replacement && this.needList) {
      replacement.abandon();
      throw new StreamEndedEarlyError("the streaming list ended before the bookmark that ends its state");
    }
    return delivered || this.clock.now() - started >= SHORT_WATCH_MS;
  }

  /** The whole state came at `rv`. */
  private synced(rv: string): void {
    if (rv !== "") this.rv = rv;
    this.rvUnavailable = false;
    this.needList = false;
    this.signOfLife();
  }

  private onEvent({ type, object }: WatchEvent): undefined {
    if (type === "ADDED" || type === "MODIFIED") this.store.put(object);
    else if (type === "DELETED") this.store.delete(object);
    else if (type !== "BOOKMARK") return;
    const rv = versionOf(object);
    if (rv !== "") this.rv = rv;
    this.signOfLife();
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
    let timedOut = false;
    let lastSign = this.clock.now();
    // One timer, moved on only when it fires: a sign of life is a clock read, not a new timer.
    const check = () => {
      const quietMs = this.clock.now() - lastSign;
      if (quietMs < limitMs) {
        timer = this.clock.setTimeout(check, limitMs - quietMs);
        return;
      }
      timedOut = true;
      controller.abort();
    };
    let timer = this.clock.setTimeout(check, limitMs);
    const arm = () => {
      lastSign = this.clock.now();
    };
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

/** The version asked for is not (or not yet) the server's: read the whole state consistently. */
function unavailable(err: unknown): boolean {
  return err instanceof ApiStatusError && (err.expired || err.resourceVersionTooLarge);
}

/** The server does not do streaming lists: it refused one, or ended it before its state was whole. */
function refusal(err: unknown): boolean {
  if (err instanceof StreamEndedEarlyError) return true;
  if (!(err instanceof ApiStatusError)) return false;
  return err.code >= 400 && err.code < 500 && err.code !== 410 && err.code !== 429;
}

function versionOf(object: unknown): string {
  const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
  return typeof rv === "string" ? rv : "";
}
