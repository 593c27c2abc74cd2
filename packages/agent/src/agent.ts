/**
 * Agent: EndpointSlices in (compact, from the reflector's store), removal batches out. Slices are
 * merged per backend (EndpointCache), removals coalesced (RemovalTracker), each batch handed to the
 * Terminator in one call — one pass over every namespace for all its backends — then counted,
 * logged and saved.
 *
 * The first sync is all or nothing: a list is applied only once it came whole; until then nothing
 * saved is terminated and nothing is saved, so the file still holds what
 * the agent knew when it last ran, and its difference with the first whole list is what was removed
 * while it was away. A re-list replaces the slices known, as client-go's store does.
 */
import type { Logger } from "pino";
import { Aftercare } from "./aftercare.js";
import type { BackendKey } from "./backend.js";
import { type Clock, systemClock } from "./clock.js";
import { type Before, EndpointCache } from "./endpoint-cache.js";
import type { AgentMetrics } from "./metrics.js";
import { Passes } from "./passes.js";
import type { PodEvents } from "./pod-events.js";
import { RemovalTracker, type TerminatingPolicy } from "./removals.js";
import type { SliceContent } from "./slice.js";
import type { SliceSink } from "./slice-store.js";
import type { StateFile } from "./state-file.js";
import type { Terminator } from "./terminator.js";

export interface AgentSettings {
  policy: TerminatingPolicy;
  coalesceMs: number;
  /** How long after its batch a removed backend is watched over (aftercare.ts); 0: not at all. */
  aftercareMs: number;
  dryRun: boolean;
}

export interface AgentParts {
  terminator: Terminator;
  state: StateFile;
  metrics: AgentMetrics;
  logger: Logger;
  clock?: Clock;
  /** Events on the pods whose sockets a pass destroyed; absent: none. */
  events?: PodEvents;
  /** The terminator threw: the process can no longer terminate safely (e.g. stuck in a namespace). */
  onFatal?: (err: unknown) => void;
}

/** Slices applied between two turns of the event loop. */
const APPLY_CHUNK = 500;
export class Agent implements SliceSink {
  private readonly cache = new EndpointCache();
  private readonly tracker: RemovalTracker;
  private readonly aftercare: Aftercare;
  private readonly passes: Passes;
  private readonly clock: Clock;
  private saved = new Map<BackendKey, string[]>();
  private synced = false;
  /** A list is being applied. */
  private applying = false;
  private stopping = false;
  private batches: Promise<void> | undefined;
  private saveTimer: unknown;

  constructor(
    private readonly settings: AgentSettings,
    private readonly parts: AgentParts,
  ) {
    this.clock = parts.clock ?? systemClock;
    this.tracker = new RemovalTracker(this.cache, {
      policy: settings.policy,
      coalesceMs: settings.coalesceMs,
      clock: this.clock,
      onDue: () => this.onDue(),
    });
    this.aftercare = new Aftercare({
      windowMs: settings.aftercareMs,
      clock: this.clock,
      isTerminating: (key) => this.cache.status(key) === "terminating",
      onDue: () => this.onDue(),
    });
    this.passes = new Passes({
      terminator: parts.terminator,
      metrics: parts.metrics,
      logger: parts.logger,
      clock: this.clock,
      dryRun: settings.dryRun,
      events: parts.events,
      onFatal: (err) => parts.onFatal?.(err),
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
    this.parts.logger.info({ path: this.parts.state.path, backends: this.saved.size }, "state loaded");
  }

  /** True once a first list has been applied whole. */
  isSynced(): boolean {
    return this.synced;
  }

  /** False once the terminator failed: the process cannot terminate safely any more. */
  isWorking(): boolean {
    return this.passes.working;
  }

  slice(id: string): SliceContent | undefined {
    return this.cache.slice(id);
  }

  /**
   * Apply a whole list: slices gone from it are removed, new and changed ones put, in chunks
   * with a turn of the event loop between (nothing else changes the cache meanwhile: the watch
   * waits, and removals are looked at only once the whole list is in).
   */
  async replace(staged: ReadonlyMap<string, SliceContent>, count: number): Promise<void> {
    this.applying = true;
    const touched = new Map<BackendKey, Before>();
    const merge = (changes: Map<BackendKey, Before>) => {
      // A backend absent before, not pending and not in aftercare changes nothing: not worth remembering.
      for (const [key, before] of changes)
        if (
          !touched.has(key) &&
          (before.status !== "absent" || this.tracker.isPending(key) || this.aftercare.has(key))
        )
          touched.set(key, before);
    };
    try {
      let done = 0;
      const turn = async () => {
        if (++done % APPLY_CHUNK === 0) await new Promise((resolve) => setImmediate(resolve));
      };
      for (const id of [...this.cache.sliceIds()].filter((id) => !staged.has(id))) {
        merge(this.cache.remove(id));
        await turn();
      }
      for (const content of staged.values()) {
        if (this.cache.slice(content.id) !== content) merge(this.cache.put(content));
        await turn();
      }
    } finally {
      this.applying = false;
    }
    this.changed(touched);
    this.parts.metrics.lists.inc();
    if (this.synced) {
      this.parts.logger.info({ slices: count, changed: touched.size }, "endpointslices listed again");
      this.saveSoon(0);
      return;
    }
    // A save while the saved set is looked at would leave out the part not looked at yet.
    this.applying = true;
    let restored: number;
    try {
      restored = await this.tracker.restore(this.saved);
    } finally {
      this.applying = false;
    }
    this.synced = true;
    this.saved = new Map();
    this.parts.logger.info(
      { slices: count, backends: this.cache.backendCount, removedWhileAway: restored },
      "endpointslices synced",
    );
    this.saveSoon(0);
  }

  put(content: SliceContent): void {
    this.changed(this.cache.put(content));
  }

  remove(id: string): void {
    this.changed(this.cache.remove(id));
  }

  /**
   * Stop: no new batch starts, the batch in flight finishes, and the known set (pending removals
   * included) is saved. Call after the watch was stopped.
   */
  async stop(): Promise<void> {
    this.stopping = true;
    this.tracker.stop();
    this.aftercare.stop();
    this.clock.clearTimeout(this.saveTimer);
    await this.batches;
    if (this.synced) await this.save();
  }

  private changed(touched: ReadonlyMap<BackendKey, Before>): void {
    if (touched.size === 0) return;
    const before = this.tracker.pendingCount;
    this.tracker.observe(touched);
    for (const [key, before] of touched) {
      const owners = this.aftercare.ownersOf(key);
      if (owners === undefined) continue;
      if (this.tracker.isLiveKey(key) || this.listedForAnother(key, owners)) this.aftercare.end(key);
      else if (before.status === "terminating" && this.cache.status(key) === "absent")
        this.aftercare.restart(key);
    }
    this.parts.metrics.aftercare.set(this.aftercare.size);
    this.parts.metrics.pending.set(this.tracker.pendingCount);
    if (this.synced) this.saveSoon(this.tracker.pendingCount > before ? 0 : this.settings.coalesceMs);
  }

  private onDue(): void {
    if (this.stopping || this.batches) return;
    this.batches = this.runBatches().finally(() => {
      this.batches = undefined;
    });
  }

  /** Removal batches first; aftercare passes when no removal is due. Ends when nothing is due. */
  private async runBatches(): Promise<void> {
    for (;;) {
      if (this.stopping) return;
      const due = this.tracker.take();
      this.parts.metrics.pending.set(this.tracker.pendingCount);
      if (due.length > 0) {
        if (!(await this.passes.removal(due))) return this.fatal();
        this.tracker.settled(due);
        this.aftercare.start(
          due.filter((r) => !this.tracker.isLiveKey(r.key) && !this.listedForAnother(r.key, r.owners)),
        );
        this.parts.metrics.aftercare.set(this.aftercare.size);
        await this.save();
        continue;
      }
      const late = this.aftercare.take().filter((c) => !this.tracker.isLiveKey(c.key));
      this.parts.metrics.aftercare.set(this.aftercare.size);
      if (late.length === 0) return;
      if (!(await this.passes.aftercare(late))) return this.fatal();
    }
  }

  /**
   * Whether a slice lists the backend's address for a pod, or under a Service, other than those
   * listing it when it was removed (`owners`): the address is someone else's now, whatever the
   * new listing's conditions.
   */
  private listedForAnother(key: BackendKey, owners: readonly string[]): boolean {
    return this.cache.ownersOf(key).some((owner) => !owners.includes(owner));
  }

  /** The terminator failed: no batch runs any more; the removals stay in the saved set. */
  private fatal(): void {
    this.stopping = true;
    this.aftercare.stop();
  }

  private saveSoon(delayMs: number): void {
    this.clock.clearTimeout(this.saveTimer);
    this.saveTimer = this.clock.setTimeout(() => {
      this.saveTimer = undefined;
      void this.save();
    }, delayMs);
  }

  private save(): Promise<void> {
    // A save during a re-list's apply would write half of it; the apply saves when it is done.
    if (this.applying) return Promise.resolve();
    this.parts.metrics.backends.set(this.cache.backendCount + this.tracker.unsettledCount);
    return this.parts.state.save(this.tracker.known()).catch((err: unknown) => {
      this.parts.metrics.errors.inc({ where: "state" });
      this.parts.logger.error({ err, path: this.parts.state.path }, "state not saved");
    });
  }
}
