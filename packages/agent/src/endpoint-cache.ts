/**
 * EndpointCache: every slice the agent knows, in its compact form, merged as kube-proxy's
 * EndpointSliceCache merges a Service's slices before anything is compared — so that an endpoint
 * that moves from one slice to another never looks removed. This is the agent's only model of the
 * cluster: no copy of the objects is kept.
 *
 * Where a backend stands follows kube-proxy's choice of endpoints for a Service port
 * (CategorizeEndpoints, KEP-1669), with every Service taken as `Cluster` traffic policy: a group
 * (Service, port name, protocol, IP family) sends clients to its ready endpoints, and only when it
 * has none, to its serving terminating ones. So a backend is
 * - "ready" while some slice lists it as serving and not terminating;
 * - "fallback" while it is listed as terminating only, and some group listing it has no ready
 *   endpoint: kube-proxy still sends clients there;
 * - "terminating" while it is listed as terminating only, and every group listing it has a ready
 *   endpoint, where kube-proxy sends its clients instead;
 * - "absent" when no slice lists it as serving.
 */
import type { BackendKey } from "./backend.js";
import { BackendMap } from "./backend-map.js";
import { listsNothing, type SliceContent } from "./slice.js";

/** Where a backend stands in the merged view. */
export type BackendStatus = "ready" | "fallback" | "terminating" | "absent";

/** A touched backend as it stood before the change: what the removal tracker compares. */
export interface Before {
  status: BackendStatus;
  services: readonly string[];
}

const ABSENT: Before = Object.freeze({ status: "absent", services: Object.freeze([]) });

interface Entry {
  ready: number;
  terminating: number;
  /**
   * The Service ("namespace/service", or "(slice ns/name)" without one) of each listing: one
   * string for a single listing, a list past it (an array per backend costs ~40 bytes).
   */
  listedBy: string | string[];
}

/**
 * A backend listed once, as ready, is kept as the Service that lists it, with no entry (~50 bytes
 * a backend less); any other backend has its entry.
 */
type Listed = string | Entry;

function entryOf(listed: Listed): Entry {
  return typeof listed === "string" ? { ready: 1, terminating: 0, listedBy: listed } : listed;
}

export class EndpointCache {
  private readonly byId = new Map<string, SliceContent>();
  /** Every backend listed as serving: a million in a large cluster (see BackendMap). */
  private readonly entries = new BackendMap<Listed>();
  /** How many ready endpoints each group has, over every slice; a group without any is not kept. */
  private readonly readyIn = new Map<string, number>();
  /** The backends each group lists as terminating (with how many listings), for the groups that do. */
  private readonly terminatingIn = new Map<string, Map<BackendKey, number>>();
  /** The group of each terminating listing, for the backends that have some. */
  private readonly groupsOf = new Map<BackendKey, string[]>();
  /** Whose each listing that is not ready is ("namespace/service pod-uid"), for the backends that have some. */
  private readonly notReadyOf = new Map<BackendKey, string[]>();

  /**
   * Put a slice (added or modified); returns the backends whose standing may change, as they were.
   * A slice that lists nothing the agent acts on (a TCP-only Service when it acts on UDP) and had
   * nothing skipped is not kept: it costs nothing.
   */
  put(slice: SliceContent): Map<BackendKey, Before> {
    if (listsNothing(slice)) return this.remove(slice.id);
    const old = this.byId.get(slice.id);
    const touched = this.snapshot(old ? [old, slice] : [slice]);
    if (old) this.count(old, -1);
    this.byId.set(slice.id, slice);
    this.count(slice, +1);
    return touched;
  }

  /** Remove a slice (deleted); returns the backends whose standing may change, as they were. */
  remove(id: string): Map<BackendKey, Before> {
    const old = this.byId.get(id);
    if (!old) return new Map();
    const touched = this.snapshot([old]);
    this.byId.delete(id);
    this.count(old, -1);
    return touched;
  }

  /** The slice kept under `id`. */
  slice(id: string): SliceContent | undefined {
    return this.byId.get(id);
  }

  /** Every slice kept. */
  slices(): IterableIterator<SliceContent> {
    return this.byId.values();
  }

  /** The ids of every slice kept. */
  sliceIds(): IterableIterator<string> {
    return this.byId.keys();
  }

  status(key: BackendKey): BackendStatus {
    const entry = this.entries.get(key);
    if (entry === undefined) return "absent";
    if (typeof entry === "string" || entry.ready > 0) return "ready";
    for (const group of this.groupsOf.get(key) ?? []) if (!this.readyIn.has(group)) return "fallback";
    return "terminating";
  }

  /** The Services listing the backend as serving now, each once. */
  servicesOf(key: BackendKey): string[] {
    const listed = this.entries.get(key);
    if (listed === undefined) return [];
    const listedBy = typeof listed === "string" ? listed : listed.listedBy;
    return typeof listedBy === "string" ? [listedBy] : [...new Set(listedBy)];
  }

  /**
   * Whose the listings of the backend that are not ready are (terminating, or not serving), each
   * "namespace/service pod-uid" (the uid "" without a targetRef).
   */
  ownersOf(key: BackendKey): string[] {
    return [...(this.notReadyOf.get(key) ?? [])];
  }

  get sliceCount(): number {
    return this.byId.size;
  }

  get backendCount(): number {
    return this.entries.size;
  }

  /** How the backends that `slices` list, or that their groups list as terminating, stand now. */
  private snapshot(slices: readonly SliceContent[]): Map<BackendKey, Before> {
    const touched = new Map<BackendKey, Before>();
    const note = (key: BackendKey) => {
      if (!touched.has(key)) touched.set(key, this.before(key));
    };
    for (const slice of slices) {
      for (const key of slice.keys) note(key);
      for (const { key } of slice.notReady ?? []) note(key);
      // A group that gains its first ready endpoint, or loses its last, moves its terminating backends.
      for (const group of slice.groups)
        for (const key of this.terminatingIn.get(group)?.keys() ?? []) note(key);
    }
    return touched;
  }

  private before(key: BackendKey): Before {
    return this.entries.has(key) ? { status: this.status(key), services: this.servicesOf(key) } : ABSENT;
  }

  private count(slice: SliceContent, delta: 1 | -1): void {
    for (const group of slice.groups) addCount(this.readyIn, group, delta * slice.ready);
    const service = slice.service ?? `(slice ${slice.id})`;
    for (const key of slice.keys) {
      const groups = slice.terminating?.get(key);
      const listed = this.entries.get(key);
      if (listed === undefined && (delta < 0 || !groups)) {
        if (delta > 0) this.entries.set(key, service);
        continue;
      }
      const entry = listed === undefined ? { ready: 0, terminating: 0, listedBy: service } : entryOf(listed);
      if (listed !== undefined && delta > 0)
        entry.listedBy =
          typeof entry.listedBy === "string" ? [entry.listedBy, service] : [...entry.listedBy, service];
      if (groups) {
        entry.terminating += delta;
        for (const group of groups) {
          addListing(this.groupsOf, key, group, delta);
          const inGroup = this.terminatingIn.get(group) ?? new Map<BackendKey, number>();
          this.terminatingIn.set(group, inGroup);
          addCount(inGroup, key, delta);
          if (inGroup.size === 0) this.terminatingIn.delete(group);
        }
      } else {
        entry.ready += delta;
      }
      if (entry.ready === 0 && entry.terminating === 0) {
        this.entries.delete(key);
        continue;
      }
      if (delta < 0 && typeof entry.listedBy !== "string") {
        const rest = [...entry.listedBy];
        rest.splice(rest.indexOf(service), 1);
        entry.listedBy = rest.length === 1 ? rest[0]! : rest;
      }
      const once = entry.ready === 1 && entry.terminating === 0 && typeof entry.listedBy === "string";
      this.entries.set(key, once ? (entry.listedBy as string) : entry);
    }
    for (const { key, pod } of slice.notReady ?? [])
      addListing(this.notReadyOf, key, `${service} ${pod}`, delta);
  }
}

/** Add `delta` to the count under `key`; a count of 0 is not kept. */
function addCount<K>(counts: Map<K, number>, key: K, delta: number): void {
  const count = (counts.get(key) ?? 0) + delta;
  if (count === 0) counts.delete(key);
  else counts.set(key, count);
}

/** Add one `value` to the list under `key` (delta 1), or take one away (-1); an empty list is not kept. */
function addListing(lists: Map<BackendKey, string[]>, key: BackendKey, value: string, delta: 1 | -1): void {
  const list = lists.get(key);
  if (delta > 0) {
    if (list) list.push(value);
    else lists.set(key, [value]);
    return;
  }
  const at = list?.indexOf(value) ?? -1;
  if (at < 0) return;
  list!.splice(at, 1);
  if (list!.length === 0) lists.delete(key);
}
