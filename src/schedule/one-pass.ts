/**
 * The one-pass strategy: a pass over every task's open files (bpf/) has told, before any namespace
 * is entered, which namespaces hold something for the step; the others are ruled out — told to
 * the sink with how, never entered — and the rest are scheduled by another strategy (serial or
 * the look-ahead), in the walk's order; or, over a pool, shared out among its runners.
 */
import type { NamespaceNote, Target } from "../netns/index.js";
import type { Schedule } from "./schedule.js";
import { type RunOn, type SharedOutcome, shareOut } from "./shared.js";

/**
 * `inner` over the namespaces `ruleOut` keeps: for each target of the walk, `ruleOut` answers a
 * note saying how it was ruled out (then the sink's ruledOut is told it, and no step runs there),
 * or undefined to run the step there. What `ruleOut` throws ends the run, as a step's would.
 */
export function ruledOutFirst(
  inner: Schedule,
  ruleOut: (target: Target) => NamespaceNote<string> | undefined,
): Schedule {
  return {
    *run(targets, step, sink) {
      function* kept(): Generator<Target> {
        for (const target of targets) {
          const note = ruleOut(target);
          if (note === undefined) yield target;
          else sink.ruledOut?.(note);
        }
      }
      yield* inner.run(kept(), step, sink);
    },
  };
}

/**
 * shareOut over the places of the walk the one pass kept (`kept`, in the walk's order), the others
 * ruled out before: the runs are cut from the kept places alone, so that every runner gets its
 * share of the namespaces to enter. Each run and outcome names places of the whole walk.
 */
export async function shareOutKept<P>(
  kept: readonly number[],
  runners: number,
  run: RunOn<P>,
  signal?: { readonly aborted: boolean },
): Promise<SharedOutcome<P>> {
  const of = (at: readonly number[]) => at.map((i) => kept[i]!);
  const outcome = await shareOut(kept.length, runners, (at, w) => run(of(at), w), signal);
  return {
    done: outcome.done.map(({ places, result }) => ({ places: of(places), result })),
    failed: outcome.failed.map(({ places, error }) => ({ places: of(places), error })),
    left: of(outcome.left),
  };
}
