/**
 * EndpointCache: every slice the agent knows, in its compact form, and per backend the merge over
 * every slice that lists it — as kube-proxy's EndpointSliceCache merges a Service's slices before
 * anything is compared — so that an endpoint that moves from one slice to another never looks
 * removed. A backend is serving while any slice lists it as not terminating, terminating while only
 * terminating listings remain, absent when none does. This is the agent's only model of the
 * cluster: no copy of the objects is kept.
 */
import type { SliceContent } from "./slice.js";

/** Where a backend stands in the merged view. */
export type BackendStatus = "serving" | "terminating" | "absent";

/** A touched backend as it stood before the change: what the removal tracker compares. */
export interface Before {
  status: BackendStatus;
  services: readonly string[];
}

const ABSENT: Before = Object.freeze({ status: "absent", services: Object.freeze([]) });

interface Entry {
  serving: number;
  terminating: number;
  /**
   * The Service ("namespace/service", or "(slice ns/name)" without one) of each listing: one
   * string for the usual single listing, a list past it (an array per backend costs ~40 bytes).
   */
  listedBy: string | string[];
}

export class EndpointCache {
  private readonly byId = new Map<string, SliceContent>();
  private readonly entries = new Map<string, Entry>();

  /** Put a slice (added or modified); returns the backends whose listings changed, as they were. */
  put(slice: SliceContent): Map<string, Before> {
    const touched = new Map<string, Before>();
    const old = this.byId.get(slice.id);
    if (old) this.count(old, -1, touched);
    this.byId.set(slice.id, slice);
    this.count(slice, +1, touched);
    return touched;
  }

  /** Remove a slice (deleted); returns the backends whose listings changed, as they were. */
  remove(id: string): Map<string, Before> {
    const touched = new Map<string, Before>();
    const old = this.byId.get(id);
    if (old) {
      this.byId.delete(id);
      this.count(old, -1, touched);
    }
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

  status(key: string): BackendStatus {
    const entry = this.entries.get(key);
    if (!entry) return "absent";
    return entry.serving > 0 ? "serving" : "terminating";
  }

  /** The Services listing the backend now, each once. */
  servicesOf(key: string): string[] {
    const listedBy = this.entries.get(key)?.listedBy;
    if (listedBy === undefined) return [];
    return typeof listedBy === "string" ? [listedBy] : [...new Set(listedBy)];
  }

  /** Every backend listed by some slice. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  get sliceCount(): number {
    return this.byId.size;
  }

  get backendCount(): number {
    return this.entries.size;
  }

  private count(slice: SliceContent, delta: 1 | -1, touched: Map<string, Before>): void {
    const group = slice.service ?? `(slice ${slice.id})`;
    for (const key of slice.keys) {
      let entry = this.entries.get(key);
      if (!touched.has(key))
        touched.set(key, entry ? { status: this.status(key), services: this.servicesOf(key) } : ABSENT);
      if (!entry) {
        entry = { serving: 0, terminating: 0, listedBy: group };
        this.entries.set(key, entry);
      } else if (delta > 0) {
        entry.listedBy =
          typeof entry.listedBy === "string" ? [entry.listedBy, group] : [...entry.listedBy, group];
      }
      if (slice.terminating?.has(key)) entry.terminating += delta;
      else entry.serving += delta;
      if (entry.serving === 0 && entry.terminating === 0) {
        this.entries.delete(key);
        continue;
      }
      if (delta < 0 && typeof entry.listedBy !== "string") {
        const rest = [...entry.listedBy];
        rest.splice(rest.indexOf(group), 1);
        entry.listedBy = rest.length === 1 ? rest[0]! : rest;
      }
    }
  }
}
