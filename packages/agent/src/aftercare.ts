/**
 * Aftercare: the dataplane is late. After a backend's removal batch, whatever steers traffic
 * (kube-proxy's rules, synced at most once a second by default; Calico's connect-time maps; a
 * Cilium without socket termination) may still send new flows to it for a while, and a client that
 * reconnects at once after ECONNABORTED can land on it again. So for a window after the batch, the
 * backend is visited again at growing intervals — 1 s, then 2, 4, 8 s, and 8 s after that, with a
 * last pass at the window's end — and whatever appeared for it is terminated: a socket or flow
 * that appears is gone within 8 s plus a pass. Every backend due at about the same time goes in
 * one pass (one visit of every namespace for all of them, like a removal batch). The agent ends a
 * backend's aftercare at once when it is live again, or when a slice lists its address for another
 * pod or under another Service: an address reused by a new pod must never lose its clients.
 *
 * A backend acted on while terminating (its pod still listed, kube-proxy sending its clients
 * elsewhere) may outlast its window: it is then kept, without passes, and its window starts again
 * when it stops serving or leaves every slice, its real removal.
 */
import type { AgentBackend, BackendKey } from "./backend.js";
import type { Clock } from "./clock.js";

export interface AftercareOptions {
  /** How long after its batch a backend is watched over; 0 turns aftercare off. */
  windowMs: number;
  clock: Clock;
  /** Whether a backend is still listed as terminating (its window starts again when it stops). */
  isTerminating: (key: BackendKey) => boolean;
  /** Called when passes are due: call take(). */
  onDue: () => void;
}

/** A backend in aftercare, due for a pass. */
export interface LateCheck {
  key: BackendKey;
  backend: AgentBackend;
  services: string[];
  /** Whose its listings were when it was removed (EndpointCache.ownersOf). */
  owners: readonly string[];
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
  private readonly watched = new Map<BackendKey, Watched>();
  /** Past their window while still terminating: no passes until they stop. */
  private readonly waiting = new Map<BackendKey, LateCheck>();
  private timer: unknown;

  constructor(private readonly options: AftercareOptions) {}

  /** Watch over backends whose removal batch just ended. */
  start(removed: readonly LateCheck[]): void {
    if (this.options.windowMs <= 0 || removed.length === 0) return;
    for (const check of removed) this.watch(check);
    this.schedule();
  }

  /** The backend stopped serving or left every slice: if it is in aftercare, its window starts again. */
  restart(key: BackendKey): void {
    const check = this.watched.get(key) ?? this.waiting.get(key);
    if (!check) return;
    this.waiting.delete(key);
    this.watch(check);
    this.schedule();
  }

  /** The backend is live again, or its address someone else's: its aftercare ends now. */
  end(key: BackendKey): void {
    this.waiting.delete(key);
    if (this.watched.delete(key)) this.schedule();
  }

  /** Whose the backend's listings were when it was removed; undefined when not in aftercare. */
  ownersOf(key: BackendKey): readonly string[] | undefined {
    return (this.watched.get(key) ?? this.waiting.get(key))?.owners;
  }

  /** The backends due for a pass now (or within a moment); each is scheduled for its next pass. */
  take(): LateCheck[] {
    const now = this.options.clock.now();
    const due: LateCheck[] = [];
    for (const w of this.watched.values()) {
      if (w.nextAt > now + GATHER_MS) continue;
      const { key, backend, services, owners } = w;
      due.push({ key, backend, services, owners });
      if (w.nextAt >= w.until) {
        this.watched.delete(key);
        if (this.options.isTerminating(key)) this.waiting.set(key, { key, backend, services, owners });
        continue;
      }
      w.intervalMs = Math.min(MAX_INTERVAL_MS, w.intervalMs * 2);
      w.nextAt = Math.min(w.until, now + w.intervalMs);
    }
    this.schedule();
    return due;
  }

  has(key: BackendKey): boolean {
    return this.watched.has(key) || this.waiting.has(key);
  }

  /** How many backends are in their aftercare window. */
  get size(): number {
    return this.watched.size;
  }

  /** Stop the timer (for shutdown). */
  stop(): void {
    this.options.clock.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private watch({ key, backend, services, owners }: LateCheck): void {
    const now = this.options.clock.now();
    const first = Math.min(FIRST_PASS_MS, this.options.windowMs);
    this.watched.set(key, {
      key,
      backend,
      services,
      owners,
      until: now + this.options.windowMs,
      nextAt: now + first,
      intervalMs: first,
    });
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
