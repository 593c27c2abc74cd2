/**
 * A termination over many namespaces, spread over a pool of worker threads: one per core (at most 8,
 * and as many as a quarter of the process's memory holds), each the same worker as the first — its
 * own thread entering namespaces and coming back, with its own netlink sockets. The first lists the
 * namespaces; the workers take runs of them in the walk's order, each the next run when it is done
 * with one, so that a worker still starting, or one held up by crowded namespaces, takes fewer;
 * their reports merge into the one a single thread would give, in the walk's order. Dumps of a table
 * the namespaces share then run side by side in the kernel instead of one after another.
 */
import { availableParallelism, totalmem } from "node:os";
import { type NetnsRef, targetLabel } from "../netns/index.js";
import { AbortError, emptyTally } from "../run/index.js";
import {
  type Backend,
  BackendSet,
  type BatchTerminationReport,
  emptyBatchReport,
} from "../terminator/index.js";
import { type Abortable, client, WorkerClient } from "./client.js";
import { mergeReports, type ReportPart } from "./merge.js";
import type { CallMap, SentArgs } from "./ops.js";
import { WorkerStoppedError } from "./worker-errors.js";

/** A terminator's configuration as the caller's thread sends it (its callbacks may be async). */
type SentConfig = NonNullable<SentArgs<CallMap["terminateManyAt"]["args"]>[0]>;

/** The resident memory a worker adds: its own heap, the library and koffi loaded again. */
export const WORKER_BYTES = 14 * 1024 * 1024;

/**
 * Workers for `cores` cores and `memory` bytes the process may use: one per core, at most 8, and
 * no more than a quarter of the memory can hold; always one.
 */
export function workersFor(cores: number, memory: number): number {
  return Math.max(1, Math.min(cores, 8, Math.floor(memory / 4 / WORKER_BYTES)));
}

/**
 * Workers a termination spreads over, for the cores the process may use now and its memory (a
 * cgroup's limit, else the machine's). Asked at each call (sched_getaffinity): a container's CPU
 * set can change while the process runs; workers started for more cores than there are now stay
 * idle.
 */
export const poolSize = () => workersFor(availableParallelism(), memoryLimit());

/** The cgroup's memory limit when it is below the machine's memory, else the machine's. */
function memoryLimit(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 && limit < totalmem() ? limit : totalmem();
}

const pool: WorkerClient[] = [client];

function worker(i: number): WorkerClient {
  pool[i] ??= new WorkerClient();
  return pool[i];
}

/**
 * Whether terminateMany with this configuration goes to the pool: every namespace is visited
 * (netns "all", the terminator's default) and there is more than one core.
 */
export function isShared(config: SentConfig): boolean {
  return poolSize() > 1 && (config.netns === undefined || config.netns === "all");
}

/**
 * terminateMany with `netns: "all"` over the pool: the same report as one worker's (see
 * mergeReports). An abort rejects with AbortError whose `report` merges every worker's so far; the
 * namespaces of a worker that was stopped (silent after the abort) are in it with a
 * WorkerStoppedError: what was done there is unknown. `workers`: the pool (a test puts its own).
 */
export async function terminateShared(
  config: SentConfig,
  backends: readonly Backend[],
  options: object,
  control: Abortable,
  workers: (i: number) => WorkerClient = worker,
): Promise<BatchTerminationReport> {
  const { signal } = control;
  const selection = {
    netns: "all" as const,
    netnsDirs: config.netnsDirs,
    discover: config.discover,
  };
  const walk = await client.call("listTargets", [selection], control);
  const size = Math.min(poolSize(), walk.refs.length);
  const chunks = chunked(walk.refs.length, size);
  const parts: ReportPart[] = [];
  const lost: ReportPart[] = [];
  let taken = 0;
  // Each worker takes the next run of namespaces until none is left (or the call is aborted).
  const runs = Array.from({ length: size }, async (_, w) => {
    while (taken < chunks.length && !signal?.aborted) {
      const mine = chunks[taken++]!;
      const { onNamespace } = config;
      // Each run counts its own namespaces: the caller is told each one's place in the whole walk.
      const share: SentConfig = onNamespace
        ? { ...config, onNamespace: (result, index) => onNamespace(result, mine[index]!, walk.refs.length) }
        : config;
      try {
        const report = await workers(w).call(
          "terminateManyAt",
          [share, backends, mine.map((i) => walk.refs[i]), options],
          control,
        );
        parts.push({ report, places: mine });
      } catch (err) {
        if (err instanceof AbortError && err.report)
          parts.push({ report: err.report as BatchTerminationReport, places: mine });
        if (err instanceof WorkerStoppedError) lost.push(unknownPart(config, backends, mine, walk.refs, err));
        throw err;
      }
    }
  });
  const settled = await Promise.allSettled(runs);
  let aborted: AbortError | undefined;
  for (const s of settled)
    if (s.status === "rejected") aborted ??= s.reason instanceof AbortError ? s.reason : undefined;
  // A worker is stopped only once the call was aborted: its run ends the call as an abort does.
  if (lost.length > 0) aborted ??= new AbortError(signal);
  const failed = settled.find(
    (s) =>
      s.status === "rejected" && !(s.reason instanceof AbortError || s.reason instanceof WorkerStoppedError),
  );
  if (failed) throw (failed as PromiseRejectedResult).reason;
  if (parts.length + lost.length === 0) throw aborted ?? new AbortError(signal);
  // Reports that say what was done first: the merge takes its shape (conntrack or not) from the first.
  const report = mergeReports([...parts, ...lost], walk);
  if (aborted) {
    report.ok = false;
    aborted.report = report;
    throw aborted;
  }
  return report;
}

/**
 * The report part of a run whose worker was stopped: each of its namespaces with `err` (what was
 * done there is unknown), nothing counted.
 */
function unknownPart(
  config: SentConfig,
  backends: readonly Backend[],
  places: readonly number[],
  refs: readonly (NetnsRef | undefined)[],
  err: WorkerStoppedError,
): ReportPart {
  const set = new BackendSet(backends, config.protocol ?? "udp");
  return {
    places,
    report: {
      ...emptyBatchReport(set.backends, false),
      namespaces: places.map((i) => ({
        netns: targetLabel({ netns: undefined, ref: refs[i], label: refs[i]?.label }),
        error: err,
        backends: set.backends.map(() => emptyTally()),
      })),
      ok: false,
    },
  };
}

/**
 * The namespaces' places 0..count-1 in runs for `workers` to take in turn: four runs a worker, at
 * most 16 namespaces each, so that the last runs are short and every worker ends near the same time.
 */
function chunked(count: number, workers: number): number[][] {
  const size = Math.max(1, Math.min(16, Math.ceil(count / (workers * 4))));
  const chunks: number[][] = [];
  for (let from = 0; from < count; from += size)
    chunks.push(Array.from({ length: Math.min(size, count - from) }, (_, i) => from + i));
  return chunks;
}
