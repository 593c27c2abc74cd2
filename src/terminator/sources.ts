/**
 * How a termination walks its namespaces: the guard that keeps a walk's own exception — a
 * namespace named alone that cannot be opened, a test's source that breaks — from ending it
 * unreported, and the look ahead that lets the next namespace's dump start early.
 */

import { isFatalNetnsError, type Target } from "../netns/index.js";
import { ForeignError } from "../sys/errors.js";

/** `err` as an Error: a thrown non-Error is wrapped (ForeignError). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new ForeignError(err);
}

/** The items of `source`; an exception its iterator throws ends the walk and goes to `broken`. */
export function* guarded<T>(source: Iterable<T>, broken: Error[]): Generator<T> {
  const items = source[Symbol.iterator]();
  try {
    for (;;) {
      let next: IteratorResult<T>;
      try {
        next = items.next();
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        broken.push(asError(err));
        return;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    items.return?.();
  }
}

/** A target pulled from the walk ahead of its visit: a copy, unless it is yielded before the next pull. */
interface Queued {
  target: Target;
  copied: boolean;
  /** What `ahead` said of it: nothing to walk there, so the one after it may be announced too. */
  idle: boolean;
}

/** How far announced() looks ahead. */
export interface LookAhead {
  /** Whether to announce the targets pulled now. Default: always. */
  wanted?: () => boolean;
  /** Targets pulled ahead of the one visited (it included), at most. Default 4. */
  depth?: number;
  /** Targets after the one visited with a walk in flight, at most. Default 1. */
  walks?: number;
}

/**
 * The targets of `source`, each told to `ahead` before the one before it is yielded while
 * `wanted()` says so, so that its dump can start while the one before is worked on: up to `walks`
 * targets after the one visited have their walks in flight (several run side by side on as many
 * threads). Where `ahead` answers that a namespace has nothing to walk (its counters show no
 * socket), it does not count among them, up to `depth` targets pulled ahead. A walk closes its
 * handles as it advances, so the targets announced carry copies, lent until the loop moves on;
 * the others are yielded as they come. Where a copy cannot be made, none is tried again.
 */
export function* announced(
  source: Iterable<Target>,
  ahead: (target: Target) => boolean,
  { wanted = () => true, depth = 4, walks = 1 }: LookAhead = {},
): Generator<Target> {
  const items = source[Symbol.iterator]();
  const queue: Queued[] = [];
  let looking = true;
  let done = false;
  try {
    for (;;) {
      while (!done && wantsMore(queue, depth, walks)) {
        const next = items.next();
        if (next.done) {
          done = true;
          break;
        }
        queue.push(pulled(next.value));
      }
      const head = queue[0];
      if (!head) return;
      yield head.target;
      queue.shift();
      if (head.copied) head.target.netns?.close();
    }
  } finally {
    for (const q of queue) if (q.copied) q.target.netns?.close();
    items.return?.();
  }

  function pulled(target: Target): Queued {
    if (looking && wanted()) {
      try {
        const copy = { ...target, netns: target.netns?.dup() };
        return { target: copy, copied: true, idle: ahead(copy) };
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        looking = false;
      }
    }
    return { target, copied: false, idle: false };
  }
}

/**
 * Whether to pull another target before yielding the queue's head: an uncopied one must be yielded
 * before its handle is closed by the next pull; otherwise pull until `walks` targets after the head
 * have a walk in flight, or `depth` are queued.
 */
function wantsMore(queue: readonly Queued[], depth: number, walks: number): boolean {
  const last = queue.at(-1);
  if (!last) return true;
  if (!last.copied || queue.length >= depth) return false;
  let inFlight = 0;
  for (let i = 1; i < queue.length; i++) if (!queue[i]!.idle) inFlight++;
  return inFlight < walks;
}
