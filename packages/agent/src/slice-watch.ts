/**
 * SliceWatch: the agent's reflector for EndpointSlices, modelled on client-go's: list (in pages,
 * each page handed over as it comes, the whole applied only once the last page came), then watch
 * from the list's resourceVersion with bookmarks; a watch that ends is started again from the last
 * resourceVersion seen; "410 Gone" lists again. It keeps no objects: the consumer reads each one.
 *
 * Every request can fail, hang or go silent, so:
 * - every retry, list or watch, whatever the error, waits an exponential back-off with jitter,
 *   capped; the back-off resets only once a watch has delivered an event or a bookmark;
 * - each watch asks the server to end it (`timeoutSeconds` drawn between the watch timeout and twice
 *   it, as client-go draws 5 to 10 minutes), and is given up when it has sent nothing for longer
 *   than that plus a margin (a stuck proxy keeps a connection open and silent);
 * - each list page is given up after the list timeout.
 */
import { setTimeout as sleep } from "node:timers/promises";
import { ApiStatusError, type EndpointSliceApi } from "./kube-api.js";

export interface SliceWatchEvents {
  /** One page of a list in progress: read and stage its items, apply nothing yet. */
  listPage(items: readonly unknown[]): void;
  /** The list in progress came whole: apply what was staged (replacing what was known); the watch waits for it. */
  listed(count: number): Promise<void>;
  /** The list in progress was given up: drop what was staged. */
  listAbandoned(): void;
  /** ADDED or MODIFIED by watch. */
  put(object: unknown): void;
  /** DELETED by watch. */
  delete(object: unknown): void;
  /** A watch was answered 200: events follow. */
  watchOpened(): void;
  /** A failed list or watch; the next attempt starts after `delayMs`. */
  error(err: unknown, step: "list" | "watch", delayMs: number): void;
}

export interface SliceWatchOptions {
  /** Items per list page. Default 500, as client-go's pager. */
  pageSize?: number;
  /** The watch timeout T: each watch asks for T to 2T, and is given up after its ask plus a margin. Default 300,000. */
  watchTimeoutMs?: number;
  /** A list page that has not come in this long is given up. Default min(60,000, watchTimeoutMs). */
  listTimeoutMs?: number;
  /** First back-off; doubles up to `maxBackoffMs`. Default 500. */
  backoffMs?: number;
  /** Default 30,000. */
  maxBackoffMs?: number;
  /** How long the watch still counts as healthy after its last sign of life while it fails. Default 60,000. */
  staleAfterMs?: number;
  /** For tests: the random source of jitter and of `timeoutSeconds`. */
  random?: () => number;
}

/** A watch that ends cleanly sooner than this with nothing delivered counts as a failure (client-go). */
const SHORT_WATCH_MS = 1000;

/** A watch or list given up by the agent, with why. */
export class GivenUpError extends Error {
  override readonly name = "GivenUpError";
}

export class SliceWatch {
  private readonly pageSize: number;
  private readonly watchTimeoutMs: number;
  private readonly listTimeoutMs: number;
  private readonly backoffMs: number;
  private readonly maxBackoffMs: number;
  private readonly staleAfterMs: number;
  private readonly random: () => number;
  private readonly stopper = new AbortController();
  private running: Promise<void> | undefined;
  private rv = "";
  private attempt = 0;
  private failing = false;
  private lastSignOfLife = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly api: EndpointSliceApi,
    private readonly events: SliceWatchEvents,
    options: SliceWatchOptions = {},
  ) {
    this.pageSize = options.pageSize ?? 500;
    this.watchTimeoutMs = options.watchTimeoutMs ?? 300_000;
    this.listTimeoutMs = options.listTimeoutMs ?? Math.min(60_000, this.watchTimeoutMs);
    this.backoffMs = options.backoffMs ?? 500;
    this.maxBackoffMs = options.maxBackoffMs ?? 30_000;
    this.staleAfterMs = options.staleAfterMs ?? 60_000;
    this.random = options.random ?? Math.random;
  }

  /** Start listing and watching in the background; returns at once. */
  start(): void {
    this.running ??= this.run();
  }

  /** Stop: the request in flight is given up; no event is reported after this resolves. */
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
    return !this.failing || performance.now() - this.lastSignOfLife < this.staleAfterMs;
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
        const delayMs = this.nextBackoff();
        this.events.error(err, step, delayMs);
        await sleep(delayMs, undefined, { signal: stopped }).catch(() => undefined);
      }
    }
  }

  /** One whole list, page by page; the consumer applies it only once every page came. */
  private async list(): Promise<void> {
    let token: string | undefined;
    let count = 0;
    let rv = "";
    try {
      do {
        const page = await this.limited(this.listTimeoutMs, "a list page", (signal) =>
          this.api.listPage(this.pageSize, token, signal),
        );
        this.events.listPage(page.items);
        count += page.items.length;
        rv = page.resourceVersion;
        token = page.continue;
        // Let the event loop serve others between pages.
        await new Promise((resolve) => setImmediate(resolve));
      } while (token !== undefined);
    } catch (err) {
      this.events.listAbandoned();
      throw err;
    }
    await this.events.listed(count);
    this.rv = rv;
    this.signOfLife();
  }

  /**
   * One watch from the current resourceVersion. Resolves true when the server ended it after it
   * delivered something or lasted a while (watch again at once), false when it ended at once with
   * nothing; rejects on every error, and when it went silent.
   */
  private async watchOnce(): Promise<boolean> {
    const askSeconds = Math.round((this.watchTimeoutMs / 1000) * (1 + this.random()));
    const silenceMs = askSeconds * 1000 + Math.max(1000, this.watchTimeoutMs / 10);
    const started = performance.now();
    let delivered = false;
    await this.limited(silenceMs, "a silent watch", (signal, rearm) =>
      this.api.watch(
        this.rv,
        Math.max(1, askSeconds),
        signal,
        (event) => {
          rearm();
          this.onEvent(event.type, event.object);
          delivered = true;
        },
        () => this.events.watchOpened(),
      ),
    );
    return delivered || performance.now() - started >= SHORT_WATCH_MS;
  }

  private onEvent(type: string, object: unknown): void {
    if (type === "ADDED" || type === "MODIFIED") this.events.put(object);
    else if (type === "DELETED") this.events.delete(object);
    else if (type !== "BOOKMARK") return;
    const rv = (object as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (typeof rv === "string" && rv !== "") this.rv = rv;
    this.signOfLife();
    this.attempt = 0;
  }

  private signOfLife(): void {
    this.failing = false;
    this.lastSignOfLife = performance.now();
  }

  /** The next back-off: base·2^n capped, drawn between half of it and all of it ("equal jitter"). */
  private nextBackoff(): number {
    const ceiling = Math.min(this.maxBackoffMs, this.backoffMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  /**
   * Run `request` with a signal that aborts when the agent stops or when `limitMs` passes without
   * `rearm()` being called; a request given up for time rejects with GivenUpError.
   */
  private async limited<T>(
    limitMs: number,
    what: string,
    request: (signal: AbortSignal, rearm: () => void) => Promise<T>,
  ): Promise<T> {
    const controller = new AbortController();
    const onStop = () => controller.abort(this.stopper.signal.reason);
    this.stopper.signal.addEventListener("abort", onStop, { once: true });
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
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
      clearTimeout(timer);
      this.stopper.signal.removeEventListener("abort", onStop);
    }
  }
}
