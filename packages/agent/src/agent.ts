/**
 * Agent: EndpointSlice events in, removal batches out. Slices are merged per Service
 * (EndpointCache), removals coalesced (RemovalTracker), each batch handed to the Terminator in one
 * call — one pass over every namespace for all its backends — then counted, logged and saved. The
 * set of live backends is saved after every batch and every change, never before the first list is
 * synced: until then the saved file still holds what the agent knew when it last ran, and the
 * difference with the first list is what was removed while it was away.
 */
import type { V1EndpointSlice } from "@kubernetes/client-node";
import type { Logger } from "pino";
import type { AgentProtocol } from "./backend.js";
import { EndpointCache } from "./endpoint-cache.js";
import type { AgentMetrics } from "./metrics.js";
import { type Clock, type Removal, RemovalTracker, systemClock, type TerminatingPolicy } from "./removals.js";
import { readSlice, sliceId } from "./slice.js";
import type { SliceWatchEvents } from "./slice-watch.js";
import type { SavedBackend, StateFile } from "./state-file.js";
import type { BatchOutcome, Terminator } from "./terminator.js";

export interface AgentSettings {
  protocols: readonly AgentProtocol[];
  policy: TerminatingPolicy;
  coalesceMs: number;
  dryRun: boolean;
}

export interface AgentParts {
  terminator: Terminator;
  state: StateFile;
  metrics: AgentMetrics;
  logger: Logger;
  clock?: Clock;
  /** The terminator threw: the process can no longer terminate safely (e.g. stuck in a namespace). */
  onFatal?: (err: unknown) => void;
}

/** How many error lines one batch logs; the rest are counted in the batch line. */
const MAX_ERROR_LINES = 20;

export class Agent implements SliceWatchEvents {
  private readonly cache = new EndpointCache();
  private readonly tracker: RemovalTracker;
  private readonly protocols: ReadonlySet<AgentProtocol>;
  private readonly clock: Clock;
  private saved: SavedBackend[] = [];
  private synced = false;
  private stopping = false;
  private batches: Promise<void> | undefined;
  private saveTimer: unknown;

  constructor(
    private readonly settings: AgentSettings,
    private readonly parts: AgentParts,
  ) {
    this.protocols = new Set(settings.protocols);
    this.clock = parts.clock ?? systemClock;
    this.tracker = new RemovalTracker(this.cache, {
      policy: settings.policy,
      coalesceMs: settings.coalesceMs,
      clock: this.clock,
      onDue: () => this.onDue(),
    });
  }

  /** Read the saved set; call before the watch starts. */
  async load(): Promise<void> {
    const loaded = await this.parts.state.load();
    this.saved = loaded.backends;
    if (loaded.problem) {
      this.parts.metrics.errors.inc({ where: "state" });
      this.parts.logger.error(
        { path: this.parts.state.path, problem: loaded.problem },
        "state file unusable",
      );
    }
    if (loaded.invalid > 0)
      this.parts.logger.warn(
        { path: this.parts.state.path, invalid: loaded.invalid },
        "state entries ignored",
      );
    this.parts.logger.info({ path: this.parts.state.path, backends: this.saved.length }, "state loaded");
  }

  /** True once the first list has been synced. */
  ready(): boolean {
    return this.synced;
  }

  put(slice: V1EndpointSlice): void {
    const content = readSlice(slice, this.protocols);
    if (content.skipped.length > 0)
      this.parts.logger.debug({ slice: content.id, skipped: content.skipped }, "slice parts skipped");
    this.parts.logger.debug({ slice: content.id, backends: content.backends.size }, "slice put");
    this.changed(this.cache.put(content));
  }

  delete(slice: V1EndpointSlice): void {
    const id = sliceId(slice);
    this.parts.logger.debug({ slice: id }, "slice deleted");
    this.changed(this.cache.remove(id));
  }

  listed(count: number): void {
    if (this.synced) {
      this.parts.logger.info({ slices: count }, "endpointslices listed again");
      return;
    }
    this.synced = true;
    const restored = this.tracker.restore(this.saved);
    this.saved = [];
    this.parts.logger.info(
      { slices: count, backends: this.tracker.known().length - restored, removedWhileAway: restored },
      "endpointslices synced",
    );
    this.saveSoon(0);
  }

  error(err: unknown, delayMs: number): void {
    this.parts.metrics.errors.inc({ where: "watch" });
    this.parts.logger.error({ err, retryInMs: delayMs }, "endpointslice watch failed");
  }

  restarted(): void {
    this.parts.metrics.watchRestarts.inc();
    this.parts.logger.info("endpointslice watch restarted");
  }

  /**
   * Stop: no new batch starts, the batch in flight finishes, and the known set (pending removals
   * included) is saved. Call after the watch was stopped.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.tracker.stop();
    this.clock.clearTimeout(this.saveTimer);
    await this.batches;
    if (this.synced) await this.save();
  }

  private changed(touched: Set<string>): void {
    if (touched.size === 0) return;
    const before = this.tracker.pendingCount;
    this.tracker.observe(touched);
    this.parts.metrics.pending.set(this.tracker.pendingCount);
    if (this.synced) this.saveSoon(this.tracker.pendingCount > before ? 0 : this.settings.coalesceMs);
  }

  private onDue(): void {
    if (this.stopping || this.batches) return;
    this.batches = this.runBatches().finally(() => {
      this.batches = undefined;
    });
  }

  private async runBatches(): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      const due = this.tracker.take();
      this.parts.metrics.pending.set(this.tracker.pendingCount);
      if (due.length === 0) return;
      const ok = await this.runBatch(due);
      if (!ok) return;
      this.tracker.settled(due);
      await this.save();
    }
  }

  /** Returns false when the terminator threw (fatal: the removals stay in the saved set). */
  private async runBatch(due: Removal[]): Promise<boolean> {
    const started = this.clock.now();
    let outcome: BatchOutcome;
    try {
      outcome = await this.parts.terminator.terminate(due.map((r) => r.backend));
    } catch (err) {
      this.parts.metrics.errors.inc({ where: "batch" });
      this.parts.logger.fatal({ err, backends: due.map((r) => r.key) }, "terminator failed");
      this.stopping = true;
      this.parts.onFatal?.(err);
      return false;
    }
    const ended = this.clock.now();
    this.parts.metrics.countBatch(due.length, outcome, (ended - started) / 1000);
    for (const r of due)
      if (!r.restored) this.parts.metrics.eventToTerminated.observe((ended - r.since) / 1000);
    if (outcome.errors.length > 0) this.parts.metrics.errors.inc({ where: "batch" }, outcome.errors.length);
    for (const e of outcome.errors.slice(0, MAX_ERROR_LINES))
      this.parts.logger.error({ netns: e.netns, error: e.message }, "removal batch error");
    this.parts.logger.info(
      {
        services: [...new Set(due.flatMap((r) => r.services))],
        backends: due.map((r) => r.key),
        restored: due.filter((r) => r.restored).length,
        namespaces: outcome.namespaces,
        sockets: outcome.sockets,
        conntrack: outcome.conntrack,
        errors: outcome.errors.length,
        ...(outcome.unsupported ? { unsupported: outcome.unsupported } : {}),
        dryRun: this.settings.dryRun,
        durationMs: Math.round((ended - started) * 100) / 100,
      },
      "removal batch",
    );
    return true;
  }

  private saveSoon(delayMs: number): void {
    this.clock.clearTimeout(this.saveTimer);
    this.saveTimer = this.clock.setTimeout(() => {
      this.saveTimer = undefined;
      void this.save();
    }, delayMs);
  }

  private save(): Promise<void> {
    const known = this.tracker.known();
    this.parts.metrics.backends.set(known.length);
    return this.parts.state.save(known).catch((err: unknown) => {
      this.parts.metrics.errors.inc({ where: "state" });
      this.parts.logger.error({ err, path: this.parts.state.path }, "state not saved");
    });
  }
}
