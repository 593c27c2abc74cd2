/**
 * The namespaces of a call shared out over several runners (sockdiag/promises' worker threads):
 * the async counterpart of schedule.ts. The namespaces, by their places in the walk, are cut into
 * runs; each runner takes the next run in the walk's order when it is done with one, so that a
 * runner still starting, or one held up by crowded namespaces, takes fewer. What a run is — "these
 * namespaces on worker w" — is the caller's; so is making one result of the parts, which come back
 * in the walk's order. Every figure of the pool (how many workers, how long a run) and the choice
 * between the pool and one thread are here and nowhere else.
 */
import { availableParallelism, totalmem } from "node:os";
import type { NamespaceSelection } from "../netns/index.js";

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
 * Workers a call spreads over, for the cores the process may use now and its memory (a cgroup's
 * limit, else the machine's). Asked at each call (sched_getaffinity): a container's CPU set can
 * change while the process runs; workers started for more cores than there are now stay idle.
 */
export const poolSize = () => workersFor(availableParallelism(), memoryLimit());

/** The cgroup's memory limit when it is below the machine's memory, else the machine's. */
function memoryLimit(): number {
  const limit = process.constrainedMemory?.() ?? 0;
  return limit > 0 && limit < totalmem() ? limit : totalmem();
}

/**
 * Whether a call over `selection` is shared out over the pool rather than run on one thread: it
 * visits every namespace (netns "all", or unset where that is the default) and there is more than
 * one worker to share them.
 */
export function isShared(selection: NamespaceSelection): boolean {
  return poolSize() > 1 && (selection.netns === undefined || selection.netns === "all");
}

/**
 * The places 0..count-1 in runs for `runners` to take in turn: four runs a runner, at most 16
 * namespaces each, so that the last runs are short and every runner ends near the same time.
 */
export function runsOf(count: number, runners: number): number[][] {
  const size = Math.max(1, Math.min(16, Math.ceil(count / (runners * 4))));
  const runs: number[][] = [];
  for (let from = 0; from < count; from += size)
    runs.push(Array.from({ length: Math.min(size, count - from) }, (_, i) => from + i));
  return runs;
}

/** What the caller does with a run: the namespaces at `places` (in the walk's order) on `runner`. */
export type RunOn<P> = (places: readonly number[], runner: number) => Promise<P>;

/** What a shared schedule did, each list in the walk's order. */
export interface SharedOutcome<P> {
  /** The runs whose runner gave a result. */
  done: { places: readonly number[]; result: P }[];
  /** The runs whose runner threw (or rejected), and what. */
  failed: { places: readonly number[]; error: unknown }[];
  /** The places no run was handed out for: the signal aborted, or a run failed. */
  left: number[];
}

/**
 * Share the places 0..count-1 out in runs (runsOf) over `runners` runners, at most one a run,
 * each awaiting its run before it takes the next. Once `signal` aborts or a run fails, no further
 * run is handed out; the runs in flight are awaited. Never rejects: what a run throws is in
 * `failed`, beside the other runs' results.
 */
export async function shareOut<P>(
  count: number,
  runners: number,
  run: RunOn<P>,
  signal?: { readonly aborted: boolean },
): Promise<SharedOutcome<P>> {
  const used = Math.min(runners, count);
  const runs = runsOf(count, used);
  const outcome: SharedOutcome<P> = { done: [], failed: [], left: [] };
  let taken = 0;
  let stopped = false;
  const runner = async (w: number) => {
    while (taken < runs.length && !stopped && !signal?.aborted) {
      const places = runs[taken++]!;
      try {
        outcome.done.push({ places, result: await run(places, w) });
      } catch (error) {
        outcome.failed.push({ places, error });
        stopped = true;
      }
    }
  };
  await Promise.all(Array.from({ length: used }, (_, w) => runner(w)));
  const inWalkOrder = (a: { places: readonly number[] }, b: { places: readonly number[] }) =>
    a.places[0]! - b.places[0]!;
  outcome.done.sort(inWalkOrder);
  outcome.failed.sort(inWalkOrder);
  outcome.left = runs.slice(taken).flat();
  return outcome;
}
