/**
 * Passes: one call of the terminator for a set of backends — a removal batch, or an aftercare pass
 * over backends removed a moment ago — then counted and logged. Removal batches count in
 * sockets_total and conntrack_entries_total and log "removal batch"; aftercare passes count what
 * they find apart, as "late" (a non-zero count says the dataplane lagged), and log "aftercare
 * pass" (at info when they found something, else at debug: they run every few seconds).
 */
import type { Logger } from "pino";
import type { LateCheck } from "./aftercare.js";
import { keyText } from "./backend.js";
import type { Clock } from "./clock.js";
import type { AgentMetrics } from "./metrics.js";
import type { PodEvents } from "./pod-events.js";
import type { Removal } from "./removals.js";
import type { BatchError, BatchOutcome, Terminator } from "./terminator.js";

/** How many error lines one pass logs; the rest are counted in the pass's line. */
const MAX_ERROR_LINES = 20;

export interface PassParts {
  terminator: Terminator;
  metrics: AgentMetrics;
  logger: Logger;
  clock: Clock;
  dryRun: boolean;
  /** Told of the pods whose sockets each pass destroyed; absent: Events are off. */
  events?: PodEvents | undefined;
  /** The terminator threw: the process can no longer terminate safely (e.g. stuck in a namespace). */
  onFatal: (err: unknown) => void;
}

export class Passes {
  /** False once the terminator threw. */
  working = true;

  constructor(private readonly parts: PassParts) {}

  /** A removal batch. Returns false when the terminator threw (fatal). */
  async removal(due: readonly Removal[]): Promise<boolean> {
    const started = this.parts.clock.now();
    const outcome = await this.terminate(due);
    if (!outcome) return false;
    const ended = this.parts.clock.now();
    const { metrics } = this.parts;
    metrics.countBatch(due.length, outcome, (ended - started) / 1000);
    this.parts.events?.tell(due, outcome);
    for (const r of due) if (!r.restored) metrics.eventToTerminated.observe((ended - r.since) / 1000);
    this.logErrors(outcome, "removal batch error");
    this.parts.logger.info(
      {
        ...this.summary(due, outcome, ended - started),
        restored: due.filter((r) => r.restored).length,
        sockets: outcome.sockets,
        conntrack: outcome.conntrack,
      },
      "removal batch",
    );
    return true;
  }

  /** An aftercare pass. Returns false when the terminator threw (fatal). */
  async aftercare(late: readonly LateCheck[]): Promise<boolean> {
    const started = this.parts.clock.now();
    const outcome = await this.terminate(late);
    if (!outcome) return false;
    const ended = this.parts.clock.now();
    this.parts.metrics.countLate(outcome);
    this.parts.events?.tell(late, outcome);
    this.logErrors(outcome, "aftercare pass error");
    const found = outcome.sockets.matched + outcome.conntrack.matched > 0;
    this.parts.logger[found ? "info" : "debug"](
      {
        ...this.summary(late, outcome, ended - started),
        late: { sockets: outcome.sockets, conntrack: outcome.conntrack },
      },
      "aftercare pass",
    );
    return true;
  }

  private async terminate(backends: readonly LateCheck[]): Promise<BatchOutcome | undefined> {
    try {
      return await this.parts.terminator.terminate(backends.map((b) => b.backend));
    } catch (err) {
      this.parts.logger.fatal({ err, backends: backends.map((b) => keyText(b.key)) }, "terminator failed");
      this.working = false;
      this.parts.onFatal(err);
      return undefined;
    }
  }

  private summary(backends: readonly LateCheck[], outcome: BatchOutcome, ms: number) {
    return {
      services: [...new Set(backends.flatMap((b) => b.services))],
      backends: backends.map((b) => keyText(b.key)),
      namespaces: outcome.namespaces,
      ...(outcome.touched.length > 0 ? { touched: outcome.touched } : {}),
      errors: outcome.errors.length,
      ...(outcome.unsupported ? { unsupported: outcome.unsupported } : {}),
      dryRun: this.parts.dryRun,
      durationMs: Math.round(ms * 100) / 100,
    };
  }

  private logErrors(outcome: BatchOutcome, msg: string): void {
    for (const e of outcome.errors.slice(0, MAX_ERROR_LINES))
      this.parts.logger.error({ netns: e.netns, err: errorOf(e) }, msg);
  }
}

/** A batch error as pino's `err` field shows errors: message and code. */
function errorOf(e: BatchError): { message: string; code?: string } {
  return { message: e.message, ...(e.code ? { code: e.code } : {}) };
}
