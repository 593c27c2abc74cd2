/**
 * EndpointCache: every slice the agent knows, merged per Service before anything is compared — as
 * kube-proxy's EndpointSliceCache does — so that an endpoint that moves from one slice of its
 * Service to another never looks removed. A backend's status is the merge over every slice of every
 * Service that lists it: serving while any lists it as not terminating, terminating while only
 * terminating listings remain, absent when none does.
 */
import type { AgentBackend } from "./backend.js";
import type { SliceContent } from "./slice.js";

/** Where a backend stands in the merged view. */
export type BackendStatus = "serving" | "terminating" | "absent";

interface Listings {
  serving: number;
  terminating: number;
}

interface Entry {
  backend: AgentBackend;
  /** Per Service ("namespace/service"), how many of its slices list the backend, by condition. */
  services: Map<string, Listings>;
}

export class EndpointCache {
  private readonly slices = new Map<string, SliceContent>();
  private readonly entries = new Map<string, Entry>();

  /** Put a slice (added or modified); returns the keys of the backends whose listings changed. */
  put(slice: SliceContent): Set<string> {
    const touched = new Set<string>();
    const old = this.slices.get(slice.id);
    if (old) this.count(old, -1, touched);
    this.slices.set(slice.id, slice);
    this.count(slice, +1, touched);
    return touched;
  }

  /** Remove a slice (deleted); returns the keys of the backends whose listings changed. */
  remove(id: string): Set<string> {
    const touched = new Set<string>();
    const old = this.slices.get(id);
    if (old) {
      this.slices.delete(id);
      this.count(old, -1, touched);
    }
    return touched;
  }

  status(key: string): BackendStatus {
    const entry = this.entries.get(key);
    if (!entry) return "absent";
    for (const l of entry.services.values()) if (l.serving > 0) return "serving";
    return "terminating";
  }

  backend(key: string): AgentBackend | undefined {
    return this.entries.get(key)?.backend;
  }

  /** The Services listing the backend now. */
  servicesOf(key: string): string[] {
    return [...(this.entries.get(key)?.services.keys() ?? [])];
  }

  /** Every backend listed by some slice. */
  keys(): IterableIterator<string> {
    return this.entries.keys();
  }

  get sliceCount(): number {
    return this.slices.size;
  }

  private count(slice: SliceContent, delta: 1 | -1, touched: Set<string>): void {
    const group = slice.service ?? `(slice ${slice.id})`;
    for (const [key, { backend, terminating }] of slice.backends) {
      touched.add(key);
      let entry = this.entries.get(key);
      if (!entry) {
        entry = { backend, services: new Map() };
        this.entries.set(key, entry);
      }
      let listings = entry.services.get(group);
      if (!listings) {
        listings = { serving: 0, terminating: 0 };
        entry.services.set(group, listings);
      }
      if (terminating) listings.terminating += delta;
      else listings.serving += delta;
      if (listings.serving === 0 && listings.terminating === 0) entry.services.delete(group);
      if (entry.services.size === 0) this.entries.delete(key);
    }
  }
}
