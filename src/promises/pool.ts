/**
 * A termination over many namespaces, spread over a pool of worker threads: one per core (at most
 * 8), each the same worker as the first — its own thread entering namespaces and coming back, with
 * its own netlink sockets. The first lists the namespaces; each worker visits a share of them
 * (every k-th, so that crowded and empty namespaces mix); their reports merge into the one a single
 * thread would give, in the walk's order. Dumps of a table the namespaces share then run side by
 * side in the kernel instead of one after another.
 */
import { availableParallelism } from "node:os";
import { AbortError } from "../run/index.js";
import type { Backend, BatchTerminationReport } from "../terminator/index.js";
import { mergeReports, type ReportPart } from "../terminator/merge.js";
import { client, WorkerClient } from "./client.js";
import type { CallMap, SentArgs } from "./ops.js";

/** A terminator's configuration as the caller's thread sends it (its callbacks may be async). */
type SentConfig = NonNullable<SentArgs<CallMap["terminateManyAt"]["args"]>[0]>;

/** Workers in the pool: one per core the process may use, at most 8. */
export const POOL_SIZE = Math.min(availableParallelism(), 8);

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
  return POOL_SIZE > 1 && (config.netns === undefined || config.netns === "all");
}

/**
 * terminateMany with `netns: "all"` over the pool: the same report as one worker's (see
 * mergeReports). An abort rejects with AbortError whose `report` merges every worker's so far.
 */
export async function terminateShared(
  config: SentConfig,
  backends: readonly Backend[],
  options: object,
  signal: AbortSignal | undefined,
): Promise<BatchTerminationReport> {
  const selection = {
    netns: "all" as const,
    netnsDirs: config.netnsDirs,
    discover: config.discover ?? false,
  };
  const walk = await client.call("listTargets", [selection], signal);
  const size = Math.min(POOL_SIZE, walk.refs.length);
  const places = Array.from({ length: size }, (_, w) =>
    walk.refs.map((_, i) => i).filter((i) => i % size === w),
  );
  const runs = places.map((mine, w) => {
    const { onNamespace } = config;
    // Each worker counts its own namespaces: the caller is told each one's place in the whole walk.
    const share: SentConfig = onNamespace
      ? { ...config, onNamespace: (result, index) => onNamespace(result, mine[index]!) }
      : config;
    return worker(w).call(
      "terminateManyAt",
      [share, backends, mine.map((i) => walk.refs[i]), options],
      signal,
    );
  });
  const settled = await Promise.allSettled(runs);
  const parts: ReportPart[] = [];
  let aborted: AbortError | undefined;
  settled.forEach((s, w) => {
    if (s.status === "fulfilled") parts.push({ report: s.value, places: places[w]! });
    else if (s.reason instanceof AbortError && s.reason.report)
      parts.push({ report: s.reason.report as BatchTerminationReport, places: places[w]! });
    if (s.status === "rejected") aborted ??= s.reason instanceof AbortError ? s.reason : undefined;
  });
  const failed = settled.find((s) => s.status === "rejected" && !(s.reason instanceof AbortError));
  if (failed) throw (failed as PromiseRejectedResult).reason;
  if (parts.length === 0) throw aborted ?? new AbortError(signal);
  const report = mergeReports(parts, walk);
  if (aborted) {
    report.ok = false;
    aborted.report = report;
    throw aborted;
  }
  return report;
}
