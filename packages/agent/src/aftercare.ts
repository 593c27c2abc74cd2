/**
 * Aftercare: the dataplane is late. After a backend's removal batch, whatever steers traffic
 * (kube-proxy's rules, synced at most once a second by default; Calico's connect-time maps; a
 * Cilium without socket termination) may still send new flows to it for a while, and a client that
 * reconnects at once after ECONNABORTED can land on it again. So for a window after the batch, the
 * backend is visited again at growing intervals — 1 s, then 2, 4, 8 s, and 8 s after that, with a
 * last pass at the window's end — and whatever appeared for it is terminated: a socket or flow
 * that appears is gone within 8 s plus a pass. Every backend due at about the same time goes in
 * one pass (one visit of every namespace for all of them, like a removal batch). A backend that a
 * slice lists as live again leaves aftercare at once: an address reused by a new pod must never
 * lose its clients.
 */
import type { AgentBackend } from "./backend.js";
import type { Clock } from "./removals.js";

export interface AftercareOptions {
  /** How long after its batch a backend is watched over; 0 turns aftercare off. */
  windowMs: number;
  clock: Clock;
  /** Called when passes are due: call take(). */
  onDue: () => void;
}

/** A backend in aftercare, due for a pass. */
export interface LateCheck {
  key: string;
  backend: AgentBackend;
  services: string[];
}

interface Watched extends LateCheck {
  until: number;
  nextAt: number;
  intervalMs: number;
}

const FIRST_PASS_MS = 1000;
const MAX_INTERVAL_MS = 8000;
/** Passes due this close together are made as one. */
const GATHER_MS = 250;

export class Aftercare {
  private readonly watched = new Map<string, Watched>();
  private timer: unknown;

  constructor(private readonly options: AftercareOptions) {}

  /** Watch over backends whose removal batch just ended. */
  start(removed: readonly LateCheck[]): void {
    if (this.options.windowMs <= 0 || removed.length === 0) return;
    const now = this.options.clock.now();
    const until = now + this.options.windowMs;
    for (const { key, backend, services } of removed) {
      const first = Math.min(FIRST_PASS_MS, this.options.windowMs);
      this.watched.set(key, { key, backend, services, until, nextAt: now + first, intervalMs: first });
    }
    this.schedule();
  }

  /** The backend is live again: its aftercare ends now. */
  end(key: string): void {
    if (this.watched.delete(key)) this.schedule();
  }

  /** The backends due for a pass now (or within a moment); each is scheduled for its next pass. */
  take(): LateCheck[] {
    const now = this.options.clock.now();
    const due: LateCheck[] = [];
    for (const w of this.watched.values()) {
      if (w.nextAt > now + GATHER_MS) continue;
      due.push({ key: w.key, backend: w.backend, services: w.services });
      if (w.nextAt >= w.until) {
        this.watched.delete(w.key);
        continue;
      }
      w.intervalMs = Math.min(MAX_INTERVAL_MS, w.intervalMs * 2);
      w.nextAt = Math.min(w.until, now + w.intervalMs);
    }
    this.schedule();
    return due;
  }

  has(key: string): boolean {
    return this.watched.has(key);
  }

  /** How many backends are in aftercare. */
  get size(): number {
    return this.watched.size;
  }

  /** Stop the timer (for shutdown). */
  stop(): void {
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(): void {
    this.stop();
    let next = Number.POSITIVE_INFINITY;
    for (const w of this.watched.values()) next = Math.min(next, w.nextAt);
    if (next === Number.POSITIVE_INFINITY) return;
    this.timer = this.options.clock.setTimeout(
      () => {
        this.timer = undefined;
        this.options.onDue();
      },
      Math.max(0, next - this.options.clock.now()),
    );
  }
}
