/**
 * The reflector's back-off, client-go's (the reflector's ExponentialBackoffManager): 800 ms
 * doubling up to 30 s, each delay drawn between it and twice it (jitter factor 1.0), back to 800 ms
 * once no back-off was asked for 2 minutes.
 */

import { type Clock, systemClock } from "./clock.js";
import type { Backoff } from "./reflector.js";

export interface BackoffOptions {
  /** Default 800. */
  initialMs?: number;
  /** The delay before jitter stops doubling here. Default 30,000. */
  maxMs?: number;
  /** Back to `initialMs` when no back-off was asked this long. Default 120,000. */
  resetAfterMs?: number;
  clock?: Clock;
  random?: () => number;
}

export class ExponentialBackoff implements Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly resetAfterMs: number;
  private readonly clock: Clock;
  private readonly random: () => number;
  private delayMs: number;
  private lastAsked = Number.NEGATIVE_INFINITY;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 800;
    this.maxMs = options.maxMs ?? 30_000;
    this.resetAfterMs = options.resetAfterMs ?? 120_000;
    this.clock = options.clock ?? systemClock;
    this.random = options.random ?? Math.random;
    this.delayMs = this.initialMs;
  }

  next(): number {
    const now = this.clock.now();
    if (now - this.lastAsked > this.resetAfterMs) this.delayMs = this.initialMs;
    this.lastAsked = now;
    const base = this.delayMs;
    this.delayMs = Math.min(this.maxMs, base * 2);
    return Math.round(base * (1 + this.random()));
  }
}
