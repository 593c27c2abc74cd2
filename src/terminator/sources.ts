/**
 * The guard that keeps a termination's walk's own exception — a namespace named alone that cannot
 * be opened, a test's source that breaks — from ending it unreported.
 */

import { isFatalNetnsError } from "../netns/index.js";
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
