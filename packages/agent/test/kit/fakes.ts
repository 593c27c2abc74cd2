/**
 * Stand-ins for the agent's collaborators in unit tests: a clock driven by hand and a terminator
 * that records its batches. (The end-to-end tests use the real terminator and the real kernel.)
 */
import type { AgentBackend } from "../../src/backend.js";
import { backendText } from "../../src/backend.js";
import type { Clock } from "../../src/clock.js";
import { type BatchOutcome, emptyOutcome, type Terminator } from "../../src/terminator.js";
import { until } from "./waits.js";

/** A clock that moves only when told; timers fire in order as it passes them. */
export class ManualClock implements Clock {
  private time = 0;
  private seq = 0;
  private readonly timers = new Map<number, { at: number; fn: () => void }>();

  now(): number {
    return this.time;
  }

  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.timers.set(id, { at: this.time + ms, fn });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  /** Move forward by `ms`, firing every timer due on the way. */
  advance(ms: number): void {
    const end = this.time + ms;
    for (;;) {
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const entry of this.timers)
        if (entry[1].at <= end && (!next || entry[1].at < next[1].at)) next = entry;
      if (!next) break;
      this.timers.delete(next[0]);
      this.time = next[1].at;
      next[1].fn();
    }
    this.time = end;
  }
}

/** A terminator that records each batch's backend keys and answers with the counts it is given. */
export class RecordingTerminator implements Terminator {
  readonly batches: string[][] = [];

  constructor(
    private readonly answer: (backends: readonly AgentBackend[]) => BatchOutcome = () => emptyOutcome(),
  ) {}

  async terminate(backends: readonly AgentBackend[]): Promise<BatchOutcome> {
    this.batches.push(backends.map(backendText).sort());
    return this.answer(backends);
  }

  /**
   * Resolves once `count` batches have been recorded; rejects after `timeoutMs`, so that a batch
   * that never comes fails the test instead of leaving its file running for ever.
   */
  async waitForBatches(count: number, timeoutMs = 20_000): Promise<void> {
    await until(() => this.batches.length >= count, timeoutMs, `${count} terminator batch(es)`);
  }
}
