/**
 * A termination over many namespaces, spread over a pool of worker threads, each the same worker
 * as the first — its own thread entering namespaces and coming back, with its own netlink sockets.
 * The first lists the namespaces; schedule/ shares them out in runs (how many workers, how long a
 * run, which call is shared: schedule/shared.ts); each run is a terminateManyAt in one worker, and
 * the runs' reports merge into the one a single thread would give, in the walk's order. Dumps of a
 * table the namespaces share then run side by side in the kernel instead of one after another.
 */
import { type NetnsRef, targetLabel } from "../netns/index.js";
import { AbortError, emptyTally } from "../run/index.js";
import { poolSize, shareOut } from "../schedule/index.js";
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

const pool: WorkerClient[] = [client];

function worker(i: number): WorkerClient {
  pool[i] ??= new WorkerClient();
  return pool[i];
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
  const count = walk.refs.length;
  const { onNamespace } = config;
  const { done, failed } = await shareOut(
    count,
    poolSize(),
    (places, w) => {
      // Each run counts its own namespaces: the caller is told each one's place in the whole walk.
      // A share is walked: the one pass, over every namespace at once, is no share's.
      const share: SentConfig = {
        ...config,
        onePass: "off",
        ...(onNamespace
          ? { onNamespace: (result, index) => onNamespace(result, places[index]!, count) }
          : {}),
      };
      const refs = places.map((i) => walk.refs[i]);
      return workers(w).call("terminateManyAt", [share, backends, refs, options], control);
    },
    signal,
  );
  const parts: ReportPart[] = done.map(({ places, result }) => ({ report: result, places }));
  const lost: ReportPart[] = [];
  let aborted: AbortError | undefined;
  for (const { places, error } of failed) {
    if (error instanceof AbortError) {
      aborted ??= error;
      if (error.report) parts.push({ report: error.report as BatchTerminationReport, places });
    } else if (error instanceof WorkerStoppedError) {
      lost.push(unknownPart(config, backends, places, walk.refs, error));
    } else throw error;
  }
  // A worker is stopped only once the call was aborted: its run ends the call as an abort does.
  if (lost.length > 0) aborted ??= new AbortError(signal);
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
