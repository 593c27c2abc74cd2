/**
 * RemovalTracker: which backends were removed, and when a removal is due. A backend is live while
 * kube-proxy may send clients to it: the cache says ready, or fallback (a terminating backend whose
 * Service port has no ready endpoint); with the keep policy, any terminating backend that still
 * serves. The cache is the only record of live backends. When one stops being live it becomes
 * pending; it is due once it has stayed that way for the coalescing window, so that
 * an endpoint moving between two slices (deleted in one, added in the other, in either order) is no
 * removal. The tracker waits for a quiet window after the last change, and at most twice the window
 * after the oldest pending removal, so that a burst of changes becomes one batch and a steady churn
 * cannot postpone removals forever.
 */
import { setImmediate as turn } from "node:timers/promises";
import { type AgentBackend, type BackendKey, backendOf } from "./backend.js";
import { type Clock, systemClock } from "./clock.js";
import type { BackendStatus, Before, EndpointCache } from "./endpoint-cache.js";
import type { KnownGroup } from "./state-file.js";

/** Saved backends looked at between two turns of the event loop by restore(). */
const RESTORE_CHUNK = 4096;

/** What happens to clients of a terminating (not yet removed) backend. */
export type TerminatingPolicy = "terminate" | "keep";

/** A backend removal due for termination. */
export interface Removal {
  key: BackendKey;
  backend: AgentBackend;
  /** The Services that listed it when it was last live. */
  services: string[];
  /** When it stopped being live (clock ms). */
  since: number;
  /** Whose the listings left were when it stopped being live (EndpointCache.ownersOf). */
  owners: readonly string[];
  /** Removed while the agent was not running (found in the saved set at start). */
  restored?: boolean;
}

export interface TrackerOptions {
  policy: TerminatingPolicy;
  coalesceMs: number;
  clock?: Clock;
  /** Called when removals are due: call take(). */
  onDue: () => void;
}

export class RemovalTracker {
  private readonly pending = new Map<BackendKey, Removal>();
  private readonly inFlight = new Map<BackendKey, Removal>();
  private readonly clock: Clock;
  private timer: unknown;
  private lastChange = Number.NEGATIVE_INFINITY;

  constructor(
    private readonly cache: EndpointCache,
    private readonly options: TrackerOptions,
  ) {
    this.clock = options.clock ?? systemClock;
  }

  /**
   * Look again at backends whose listings changed in the cache (as `put`/`remove` return them,
   * with how they stood before): one that was live and is not any more is a removal.
   */
  observe(touched: ReadonlyMap<BackendKey, Before>): void {
    const now = this.clock.now();
    let removed = false;
    for (const [key, before] of touched) {
      if (this.isLive(this.cache.status(key))) {
        this.pending.delete(key);
        continue;
      }
      if (!this.isLive(before.status) || this.pending.has(key)) continue;
      this.pending.set(key, {
        key,
        backend: backendOf(key),
        services: [...before.services],
        since: now,
        owners: this.cache.ownersOf(key),
      });
      removed = true;
    }
    if (removed) {
      this.lastChange = now;
      this.schedule();
    }
  }

  /**
   * After the first list: backends of the saved set that are not live now were removed while the
   * agent was away, and are due at once. Looks at RESTORE_CHUNK of them a turn of the event loop
   * (a million saved backends beside 100,000 Services take ~1 s at load 10). Resolves to how many.
   */
  async restore(saved: ReadonlyMap<BackendKey, readonly string[]>): Promise<number> {
    const dueNow = this.clock.now() - this.options.coalesceMs;
    let count = 0;
    let looked = 0;
    for (const [key, services] of saved) {
      if (++looked % RESTORE_CHUNK === 0) await turn();
      if (this.isLive(this.cache.status(key)) || this.pending.has(key)) continue;
      this.pending.set(key, {
        key,
        backend: backendOf(key),
        services: [...services],
        since: dueNow,
        owners: this.cache.ownersOf(key),
        restored: true,
      });
      count++;
    }
    if (count > 0) {
      // Never earlier than a pending change: every firing of the timer then finds a removal due.
      this.lastChange = Math.max(this.lastChange, dueNow);
      this.schedule();
    }
    return count;
  }

  /**
   * The removals that are due, moved in flight (still in `known()` until `settled`); the timer is
   * set again for the rest.
   */
  take(): Removal[] {
    const now = this.clock.now();
    const due: Removal[] = [];
    for (const r of this.pending.values()) {
      if (now - r.since >= this.options.coalesceMs) due.push(r);
    }
    for (const r of due) {
      this.pending.delete(r.key);
      this.inFlight.set(r.key, r);
    }
    this.schedule();
    return due;
  }

  /** A batch is over (whatever its outcome): its removals leave the known set. */
  settled(removals: readonly Removal[]): void {
    for (const r of removals) this.inFlight.delete(r.key);
  }

  /**
   * Every backend that must be terminated if it goes away while the agent is not running, by
   * Service: the live ones as their slices list them (a backend listed twice comes twice), and the
   * removals not yet settled. A snapshot: a slice that lists no terminating backend is its own
   * group, and a slice is never changed once kept (a change is a new slice), so the array stays
   * the set as it is now; one pass over the slices, no key copied.
   */
  known(): KnownGroup[] {
    const groups: KnownGroup[] = [];
    for (const slice of this.cache.slices()) {
      // A key this slice lists as serving is live; only those it lists as terminating need a look.
      const terminating = slice.terminating;
      const keys = terminating
        ? slice.keys.filter((key) => !terminating.has(key) || this.isLive(this.cache.status(key)))
        : slice.keys;
      if (keys.length === 0) continue;
      groups.push(keys === slice.keys ? slice : { service: slice.service, keys });
    }
    for (const r of [...this.pending.values(), ...this.inFlight.values()]) {
      if (this.isLive(this.cache.status(r.key))) continue;
      if (r.services.length === 0) groups.push({ service: undefined, keys: [r.key] });
      for (const service of r.services) groups.push({ service, keys: [r.key] });
    }
    return groups;
  }

  /** Whether the backend is live now (ready or fallback; with keep, terminating too). */
  isLiveKey(key: BackendKey): boolean {
    return this.isLive(this.cache.status(key));
  }

  isPending(key: BackendKey): boolean {
    return this.pending.has(key);
  }

  /** Removals not yet settled: pending, and in a batch. */
  get unsettledCount(): number {
    return this.pending.size + this.inFlight.size;
  }

  get pendingCount(): number {
    return this.pending.size;
  }

  /** Stop the timer (removals stay pending and in `known()`). */
  stop(): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private isLive(status: BackendStatus): boolean {
    return (
      status === "ready" ||
      status === "fallback" ||
      (status === "terminating" && this.options.policy === "keep")
    );
  }

  private schedule(): void {
    this.stop();
    if (this.pending.size === 0) return;
    let oldest = Number.POSITIVE_INFINITY;
    for (const r of this.pending.values()) oldest = Math.min(oldest, r.since);
    const c = this.options.coalesceMs;
    const at = Math.min(this.lastChange + c, oldest + 2 * c);
    const delay = Math.max(0, at - this.clock.now());
    this.timer = this.clock.setTimeout(() => {
      this.timer = undefined;
      this.options.onDue();
    }, delay);
  }
}
