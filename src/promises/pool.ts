/**
 * A termination over many namespaces, spread over a pool of worker threads, each the same worker
 * as the first — its own thread entering namespaces and coming back, with its own netlink sockets.
 * The first lists the namespaces; schedule/ shares them out in runs (how many workers, how long a
 * run, which call is shared: schedule/shared.ts); each run is a terminateManyAt in one worker, and
 * the runs' reports merge into the one a single thread would give, in the walk's order. Dumps of a
 * table the namespaces share then run side by side in the kernel instead of one after another.
 * With the one pass, the first runs it once while listing (sharedPlan): the namespaces it rules out
 * are reported from its plan, and only those to enter are shared out, each with its verdict.
 */
import { type NetnsRef, targetLabel } from "../netns/index.js";
import { AbortError, emptyTally } from "../run/index.js";
import { poolSize, shareOutKept } from "../schedule/index.js";
import { asSockdiagError, type SockdiagError } from "../sys/errors.js";
import {
  type Backend,
  BackendSet,
  type BatchTerminationReport,
  emptyBatchReport,
  type OnePassSummary,
  ruledOutResult,
  type SharedPlan,
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
  const walk = await client.call("sharedPlan", [config, backends], control);
  const count = walk.refs.length;
  const { onNamespace } = config;
  const { ruled, kept } = planParts(config, backends, walk);
  // As one thread does: the pass's line before any namespace, the ruled-out told before they are entered.
  const { summary } = walk;
  const logged = summary ? await logOnePass(config, summary) : [];
  if (ruled) await tellRuledOut(config, ruled, count);
  const { done, failed } = await shareOutKept(
    kept,
    poolSize(),
    (places, w) => {
      // Each run counts its own namespaces: the caller is told each one's place in the whole walk.
      // A share runs no pass of its own: it is judged by the plan's verdicts, or walked.
      const share: SentConfig = {
        ...config,
        onePass: "off",
        ...(onNamespace
          ? { onNamespace: (result, index) => onNamespace(result, places[index]!, count) }
          : {}),
      };
      const refs = places.map((i) => walk.refs[i]);
      const verdicts = walk.parts && places.map((i) => verdictOf(walk.parts![i]));
      return workers(w).call("terminateManyAt", [share, backends, refs, options, verdicts], control);
    },
    signal,
  );
  if (ruled) done.unshift({ places: ruled.places, result: ruled.report });
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
  if (summary) {
    report.onePass = summary;
    if (!summary.used)
      report.notes.unshift({ netns: "(one pass)", skipped: summary.reason!, message: summary.message });
  }
  report.callbackErrors.unshift(...logged);
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

type PlanPart = NonNullable<SharedPlan["parts"]>[number];

function verdictOf(part: PlanPart) {
  return part && "verdict" in part ? part.verdict : undefined;
}

/**
 * The places of the walk to share out (`kept`), and the part of the report the one pass's plan
 * gives on its own (`ruled`): the namespaces it ruled out, in walk order, nothing counted —
 * absent without a plan.
 */
function planParts(
  config: SentConfig,
  backends: readonly Backend[],
  plan: SharedPlan,
): { ruled?: ReportPart; kept: number[] } {
  const { parts } = plan;
  if (!parts) return { kept: [...plan.refs.keys()] };
  const kept: number[] = [];
  const set = new BackendSet(backends, config.protocol ?? "udp");
  const conntrack = set.conntrackWanted(config.conntrack);
  const report = emptyBatchReport(set.backends, conntrack);
  const places: number[] = [];
  parts.forEach((part, i) => {
    if (part && "ruledOut" in part) {
      places.push(i);
      report.namespaces.push(ruledOutResult(part.ruledOut, set.size, Boolean(config.dryRun)));
    } else kept.push(i);
  });
  return { ruled: { report, places }, kept };
}

/** The caller's logger told which path the run takes; what it throws, for the report. */
async function logOnePass(config: SentConfig, summary: OnePassSummary): Promise<SockdiagError[]> {
  try {
    await config.logger?.info(summary.used ? "one pass" : "one pass not taken", { ...summary });
    return [];
  } catch (err) {
    return [asSockdiagError(err)];
  }
}

/** The caller's onNamespace told of each namespace ruled out; what it throws is the report's. */
async function tellRuledOut(config: SentConfig, ruled: ReportPart, count: number): Promise<void> {
  const { onNamespace } = config;
  if (!onNamespace) return;
  for (const [i, result] of ruled.report.namespaces.entries()) {
    try {
      await onNamespace(result, ruled.places[i]!, count);
    } catch (err) {
      ruled.report.callbackErrors.push(asSockdiagError(err));
    }
  }
}
