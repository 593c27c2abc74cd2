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

/**
 * The targets of `source`, each told to `ahead` one step before it is yielded while `wanted()` says
 * so, so that its dump can start while the one before is worked on. A walk closes its handles as it
 * advances, so the targets announced carry copies, lent until the loop moves on; the others are
 * yielded as they come. Where a copy cannot be made, none is tried again.
 */
export function* announced(
  source: Iterable<Target>,
  ahead: (target: Target) => void,
  wanted: () => boolean = () => true,
): Generator<Target> {
  let current: Target | undefined;
  let next: Target | undefined;
  let looking = true;
  try {
    for (const target of source) {
      if (looking && wanted()) {
        try {
          next = { ...target, netns: target.netns?.dup() };
        } catch (err) {
          if (isFatalNetnsError(err)) throw err;
          looking = false;
        }
      }
      if (next) ahead(next);
      if (current) yield current;
      current?.netns?.close();
      current = undefined;
      if (next) [current, next] = [next, undefined];
      else yield target;
    }
    if (current) yield current;
  } finally {
    next?.netns?.close();
    current?.netns?.close();
  }
}
