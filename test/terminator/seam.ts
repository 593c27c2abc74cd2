/** The terminator's seam as tests fill it: a namespace source of their own in place of the walk. */
import type { NamespaceFailure, NamespaceNote, NetNS, Target, WalkFindings } from "../../src/netns/index.js";

/** Namespaces a test hands the terminator, with the failures and notes met giving them (like allNetns). */
export type NamespaceSource = Iterable<{ name: string; netns: NetNS }> & {
  readonly failures: readonly NamespaceFailure[];
  readonly notes?: readonly NamespaceNote[];
};

/**
 * The seam's `targets` over `source()`: the caller's own namespace first (unless `host` is false),
 * then the source's, whose failures and notes reach the findings when the walk ends.
 */
export function targetsFrom(
  source: () => NamespaceSource,
  host = true,
): (findings: WalkFindings) => Iterable<Target> {
  return function* (findings) {
    if (host) yield { netns: undefined, ref: undefined, label: undefined };
    const s = source();
    try {
      for (const { name, netns } of s) yield { netns, ref: netns.ref, label: name };
    } finally {
      findings.failures.push(...s.failures);
      findings.notes.push(...(s.notes ?? []));
    }
  };
}

/** The seam's `targets` of the caller's own namespace alone. */
export function hostOnly(): Iterable<Target> {
  return [{ netns: undefined, ref: undefined, label: undefined }];
}
