/**
 * The one-pass strategy: a pass over every task's open files (bpf/) has told, before any namespace
 * is entered, which namespaces hold something for the step; the others are ruled out — told to
 * the sink with how, never entered — and the rest are scheduled by another strategy (serial or
 * the look-ahead), in the walk's order.
 */
import type { NamespaceNote, Target } from "../netns/index.js";
import type { Schedule } from "./schedule.js";

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
