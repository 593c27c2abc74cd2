/**
 * Where a terminator finds the namespaces it visits after the host's: a source (by default the
 * namespace walker's pins, and with `discover` every process's), and the guard that keeps a
 * source's own exception from ending the run unreported.
 */

import { isFatalNetnsError, type NamespaceFailure, type NetNS, walkNetns } from "../netns/index.js";
import { ForeignError } from "../sys/errors.js";

/** One namespace a terminator visits. */
export interface NamespaceEntry {
  name: string;
  netns: NetNS;
}

/**
 * A source of namespaces: iterable, with the failures met while iterating (like allNetns()). The
 * caller's own namespace is visited apart (includeHost): a source should not repeat it.
 */
export interface NamespaceSource extends Iterable<NamespaceEntry> {
  readonly errors: readonly NamespaceFailure[];
}

/** `err` as an Error: a thrown non-Error is wrapped (ForeignError). */
export function asError(err: unknown): Error {
  return err instanceof Error ? err : new ForeignError(err);
}

/** The entries of `source`; an exception its iterator throws ends the walk and goes to `broken`. */
export function* guarded(source: NamespaceSource, broken: Error[]): Generator<NamespaceEntry> {
  const entries = source[Symbol.iterator]();
  try {
    for (;;) {
      let next: IteratorResult<NamespaceEntry>;
      try {
        next = entries.next();
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        broken.push(asError(err));
        return;
      }
      if (next.done) return;
      yield next.value;
    }
  } finally {
    entries.return?.();
  }
}

/**
 * The namespaces pinned in the configured directories (and with `discover`, those of every
 * process), each once; the host's, visited apart, is left out wherever it is found (it may be
 * pinned too, e.g. `ip netns attach host 1`).
 */
export function defaultSource(dirs: readonly string[] | undefined, discover: boolean): NamespaceSource {
  const walk = walkNetns({ netnsDirs: dirs, processes: discover, host: "skip" });
  return {
    errors: walk.errors,
    *[Symbol.iterator]() {
      for (const { ref, netns } of walk) yield { name: ref.label, netns };
    },
  };
}
