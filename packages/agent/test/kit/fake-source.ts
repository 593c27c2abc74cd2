/**
 * Stand-ins for the reflector's seams in unit tests: a list/watch source answered by hand, a store
 * and an observer that record what they are told, a back-off with fixed delays. With ManualClock,
 * a reflector runs without a server and without real timers.
 */
import type { WatchEvent } from "../../src/kube-api.js";
import type {
  Backoff,
  ListAnswer,
  ListRequest,
  ListWatchSource,
  ReflectorObserver,
  ReflectorStore,
  Replacement,
  WatchRequest,
} from "../../src/reflector.js";
import { arrival, listed } from "./waits.js";

/** A list request in flight: answer it, or fail it. */
export interface ListCall {
  kind: "list";
  request: ListRequest;
  signal: AbortSignal;
  /** Hand one item over, the answer going on. */
  item(object: unknown): void;
  /** Hand `items` over one by one, then resolve with the answer's metadata. */
  answer(items: readonly unknown[], resourceVersion: string, continueToken?: string): void;
  /** Hand `items` over, then fail (a body cut short, an answer over a bound). */
  fail(err: unknown, items?: readonly unknown[]): void;
}

/** A watch request in flight: open it, send events, end or fail it. */
export interface WatchCall {
  kind: "watch";
  request: WatchRequest;
  signal: AbortSignal;
  open(): void;
  send(event: WatchEvent): void;
  end(): void;
  fail(err: unknown): void;
}

export type SourceCall = ListCall | WatchCall;

/** Resolves the next waiter with each call; a call aborted by its signal rejects with the reason. */
export class FakeSource implements ListWatchSource {
  readonly calls: SourceCall[] = [];
  private waiters: ((call: SourceCall) => void)[] = [];
  private unread: SourceCall[] = [];

  /**
   * The next call not yet taken by `next()` (made already or to come); rejects after `timeoutMs`
   * (default 20 s).
   */
  next(timeoutMs?: number): Promise<SourceCall> {
    const call = this.unread.shift();
    if (call) return Promise.resolve(call);
    return arrival<SourceCall>(
      `the reflector's next call (its calls so far: ${listed(this.calls.map((c) => c.kind))})`,
      (arrived) => {
        this.waiters.push(arrived);
        // Gone from the queue, so that a call made after the timeout goes to the next waiter.
        return () => {
          const i = this.waiters.indexOf(arrived);
          if (i >= 0) this.waiters.splice(i, 1);
        };
      },
      { timeoutMs },
    );
  }

  /** The next call, which must be a list. */
  async nextList(timeoutMs?: number): Promise<ListCall> {
    const call = await this.next(timeoutMs);
    if (call.kind !== "list") throw new Error(`a ${call.kind} came where a list was expected`);
    return call;
  }

  /** The next call, which must be a watch. */
  async nextWatch(timeoutMs?: number): Promise<WatchCall> {
    const call = await this.next(timeoutMs);
    if (call.kind !== "watch") throw new Error(`a ${call.kind} came where a watch was expected`);
    return call;
  }

  list(request: ListRequest, signal: AbortSignal, onItem: (item: unknown) => void): Promise<ListAnswer> {
    return new Promise((resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
      this.made({
        kind: "list",
        request,
        signal,
        item: onItem,
        answer(items, resourceVersion, continueToken) {
          for (const item of items) onItem(item);
          resolve({ resourceVersion, continue: continueToken });
        },
        fail(err, items = []) {
          for (const item of items) onItem(item);
          reject(err);
        },
      });
    });
  }

  watch(
    request: WatchRequest,
    signal: AbortSignal,
    onEvent: (event: WatchEvent) => void,
    onOpen: () => void,
  ): Promise<void> {
    return new Promise((resolve, reject) => {
      let over = false;
      signal.addEventListener(
        "abort",
        () => {
          over = true;
          reject(signal.reason);
        },
        { once: true },
      );
      this.made({
        kind: "watch",
        request,
        signal,
        open: onOpen,
        send(event) {
          if (!over) onEvent(event);
        },
        end() {
          over = true;
          resolve();
        },
        fail(err) {
          over = true;
          reject(err);
        },
      });
    });
  }

  private made(call: SourceCall): void {
    this.calls.push(call);
    const waiter = this.waiters.shift();
    if (waiter) waiter(call);
    else this.unread.push(call);
  }
}

/** What a store was told, in order. */
export type StoreOp =
  | ["replace"]
  | ["add", unknown]
  | ["commit", number]
  | ["abandon"]
  | ["put", unknown]
  | ["delete", unknown];

export class RecordingStore implements ReflectorStore {
  readonly ops: StoreOp[] = [];

  replacement(): Replacement {
    this.ops.push(["replace"]);
    return {
      add: (object) => this.ops.push(["add", object]),
      commit: async (count) => {
        this.ops.push(["commit", count]);
      },
      abandon: () => this.ops.push(["abandon"]),
    };
  }

  put(object: unknown): void {
    this.ops.push(["put", object]);
  }

  delete(object: unknown): void {
    this.ops.push(["delete", object]);
  }
}

export class RecordingObserver implements ReflectorObserver {
  opened = 0;
  readonly refusals: unknown[] = [];
  readonly failures: { err: unknown; step: "list" | "watch"; delayMs: number }[] = [];
  private readonly waiters = new Set<() => void>();

  watchOpened(): void {
    this.opened++;
  }

  failed(err: unknown, step: "list" | "watch", delayMs: number): void {
    this.failures.push({ err, step, delayMs });
    for (const w of this.waiters) w();
  }

  streamingRefused(err: unknown): void {
    this.refusals.push(err);
  }

  /** Resolves once `count` failures were reported; rejects after `timeoutMs` (default 20 s). */
  waitForFailures(count: number, timeoutMs?: number): Promise<void> {
    return arrival<void>(
      `${count} reflector failure(s)`,
      (arrived) => {
        const counted = () => {
          if (this.failures.length >= count) arrived();
        };
        this.waiters.add(counted);
        counted();
        return () => this.waiters.delete(counted);
      },
      { timeoutMs, meanwhile: () => `${this.failures.length} reported` },
    );
  }
}

/** A back-off that answers `delayMs` each time and counts its calls. */
export class FixedBackoff implements Backoff {
  calls = 0;
  constructor(readonly delayMs: number) {}
  next(): number {
    this.calls++;
    return this.delayMs;
  }
}

/** An object as a watch event or list item carries it: just its name and resourceVersion. */
export function named(name: string, resourceVersion: string): unknown {
  return { metadata: { namespace: "default", name, resourceVersion } };
}

/** Let the promises that are ready settle (one turn of the event loop; no timer). */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}
