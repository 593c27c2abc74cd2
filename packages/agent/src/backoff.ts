/**
 * The reflector's back-off: base·2^n capped, each delay drawn between half of it and all of it
 * ("equal jitter"); reset once the requests work again.
 */
import type { Backoff } from "./reflector.js";

export interface BackoffOptions {
  /** First back-off; doubles up to `maxMs`. Default 500. */
  initialMs?: number;
  /** Default 30,000. */
  maxMs?: number;
  random?: () => number;
}

export class ExponentialBackoff implements Backoff {
  private readonly initialMs: number;
  private readonly maxMs: number;
  private readonly random: () => number;
  private attempt = 0;

  constructor(options: BackoffOptions = {}) {
    this.initialMs = options.initialMs ?? 500;
    this.maxMs = options.maxMs ?? 30_000;
    this.random = options.random ?? Math.random;
  }

  next(): number {
    const ceiling = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(ceiling / 2 + (this.random() * ceiling) / 2);
  }

  reset(): void {
    this.attempt = 0;
  }
}
