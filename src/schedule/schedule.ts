/**
 * How namespaces are scheduled: the one place that decides in which order, and on which threads,
 * the namespaces of a call are worked on. A call describes what it does in one namespace — a
 * NamespaceStep: open the namespace's scan, optionally send its first walk ahead, run it — and a
 * Schedule drives that step over the namespaces: one after another (`serial`), or one after
 * another with the next namespaces' walks sent ahead to libuv's pool (`lookAhead`). The pool of
 * worker threads (sockdiag/promises) shares the namespaces out in runs (shared.ts) and runs one of
 * these in each worker. Every figure of these strategies — how many walks in flight, when the
 * look-ahead turns on — is here and nowhere else; `scheduleFor` picks the strategy.
 */

import { availableParallelism } from "node:os";
import { isFatalNetnsError, type NamespaceNote, type Target } from "../netns/index.js";

/**
 * What a call does in one namespace, as a Schedule drives it. `open` and `sendAhead` are optional:
 * a step without them is only ever run in turn.
 */
export interface NamespaceStep<R, O extends Disposable = Disposable> {
  /**
   * Open `target`'s scan before its turn, or answer undefined to leave it to `run`. May throw:
   * the namespace is then left to `run`, which opens it again and reports what fails there.
   */
  open?(target: Target): O | undefined;
  /**
   * Send the first walk of a scan `open` gave on another thread. True when the namespace has
   * nothing to walk (its counters show nothing the step asks for).
   */
  sendAhead?(opened: O): boolean;
  /**
   * The step in `target`, on the scan `open` gave when it was opened ahead (then `run` owns it and
   * disposes of it); pauses where the caller may let an event loop turn; returns the result.
   */
  run(target: Target, opened: O | undefined): Generator<void, R, void>;
}

/** Where a Schedule tells what it did. */
export interface ScheduleSink<R> {
  /** The result of the step in `target`, in the walk's order. */
  done(result: R, target: Target): void;
  /** A namespace the schedule chose not to enter, and why (not one of serial's or lookAhead's). */
  ruledOut?(note: NamespaceNote<string>): void;
}

/** A way to run a step over namespaces. */
export interface Schedule {
  /**
   * Run `step` in each of `targets`; pauses where the step does. Throws what the step or the walk
   * throws, after closing everything it opened ahead.
   */
  run<R, O extends Disposable>(
    targets: Iterable<Target>,
    step: NamespaceStep<R, O>,
    sink: ScheduleSink<R>,
  ): Generator<void, void, void>;
}

/** Each namespace in turn, opened when its turn comes. */
export const serial: Schedule = {
  *run(targets, step, sink) {
    for (const target of targets) sink.done(yield* step.run(target, undefined), target);
  },
};

/**
 * How long the last namespace with something to walk took, from its walk's sending to the end of
 * its step, for the next namespaces' walks to be sent ahead: where each namespace has a small UDP
 * table of its own a step is short and sending ahead costs more than it overlaps; over a table the
 * namespaces share, every dump walks the whole table and overlapping them pays. Timed from the
 * sending, a walk sent ahead still shows how long it was.
 */
export const AHEAD_AFTER_MS = 3;

/**
 * How many background writes (sys/socket.ts writeInBackground) run at once: the threads of libuv's
 * pool, UV_THREADPOOL_SIZE read as libuv reads it (4 when unset; a value that is not a number means
 * 1; at most 1024).
 */
export const BACKGROUND_SENDS = libuvThreads(process.env.UV_THREADPOOL_SIZE);

function libuvThreads(value: string | undefined): number {
  if (value === undefined) return 4;
  return Math.min(Math.max(Number.parseInt(value, 10) || 1, 1), 1024);
}

/**
 * Walks in flight past the namespace worked on, at most, while the look-ahead is on: each is sent
 * from a thread of libuv's pool and walks in the kernel there. Two a core, so that the cores keep
 * walking while this thread handles an answer; never more than libuv's pool runs at once.
 */
export const walksAhead = (cores: number) => Math.min(2 * cores, BACKGROUND_SENDS);

/**
 * Namespaces opened ahead, at most, the one worked on included: a few walks in flight, and the
 * namespaces between them that hold nothing to walk.
 */
export const MAX_AHEAD = 8;

/** The look-ahead's figures (tests set them, and its clock). */
export interface LookAheadFigures {
  /** Namespaces with a walk in flight after the one worked on, at most. */
  walks: number;
  /** Namespaces opened ahead, the one worked on included, at most. */
  depth?: number;
  /** The step time (ms) past which the look-ahead is on. */
  afterMs?: number;
  now?: () => number;
}

/**
 * Each namespace in turn, while the next ones are opened and their first walks sent ahead — once
 * the last namespace with something to walk took AHEAD_AFTER_MS or more — up to `walks` walks in
 * flight past the one worked on, and past them the namespaces that hold nothing to walk, up to
 * `depth` opened ahead. A walk closes its handles as it advances, so a namespace opened ahead is
 * run on a copy of its handle, closed once its step is over; where a copy cannot be made, the
 * look-ahead stays off.
 */
export function lookAhead({
  walks,
  depth = MAX_AHEAD,
  afterMs = AHEAD_AFTER_MS,
  now = () => performance.now(),
}: LookAheadFigures): Schedule {
  return {
    *run<R, O extends Disposable>(
      targets: Iterable<Target>,
      step: NamespaceStep<R, O>,
      sink: ScheduleSink<R>,
    ) {
      const { open, sendAhead } = step;
      if (!open || !sendAhead) return yield* serial.run(targets, step, sink);
      let lastStepMs = 0;
      const ahead = (target: Target): Ahead<O> => {
        const sentAt = now();
        let opened: O | undefined;
        try {
          opened = open.call(step, target);
          return { opened, sentAt, idle: opened !== undefined && sendAhead.call(step, opened) };
        } catch (err) {
          opened?.[Symbol.dispose]();
          if (isFatalNetnsError(err)) throw err;
          return { sentAt, idle: false };
        }
      };
      const queue = queueAhead(targets, ahead, { wanted: () => lastStepMs >= afterMs, depth, walks });
      for (const q of queue) {
        const start = q.sentAt ?? now();
        const opened = q.opened;
        q.opened = undefined;
        const result = yield* step.run(q.target, opened);
        if (!q.idle) lastStepMs = now() - start;
        sink.done(result, q.target);
      }
    },
  };
}

/**
 * The schedule for a step on the cores the process may use now (asked at each call: a
 * container's CPU set can change while the process runs): with a core to spare, the look-ahead,
 * else serial.
 */
export function scheduleFor(cores = availableParallelism()): Schedule {
  return cores > 1 ? lookAhead({ walks: walksAhead(cores) }) : serial;
}

/** Run `steps` (a schedule's run, a step's) to the end without pausing; its return value. */
export function drain<R>(steps: Generator<void, R, void>): R {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}

/** A target pulled from the walk ahead of its turn. */
interface Queued<O> {
  /** A copy of the walk's target when `copied`, else the walk's own, lent until the next pull. */
  target: Target;
  copied: boolean;
  /** What was opened for it ahead, until its step takes it. */
  opened?: O | undefined;
  /** When its walk was sent. */
  sentAt?: number;
  /** It holds nothing to walk, so the one after it may be opened too. */
  idle: boolean;
}

/** What opening a target ahead gave. */
type Ahead<O> = Pick<Queued<O>, "opened" | "sentAt" | "idle">;

/**
 * The targets of `source` in order, each passed to `ahead` when pulled while `wanted()` says so,
 * pulled as far ahead as wantsMore allows. What is still queued when the loop ends is closed.
 */
function* queueAhead<O extends Disposable>(
  source: Iterable<Target>,
  ahead: (target: Target) => Ahead<O>,
  limits: { wanted: () => boolean; depth: number; walks: number },
): Generator<Queued<O>> {
  const items = source[Symbol.iterator]();
  const queue: Queued<O>[] = [];
  let looking = true;
  let done = false;
  try {
    for (;;) {
      while (!done && wantsMore(queue, limits.depth, limits.walks)) {
        const next = items.next();
        if (next.done) {
          done = true;
          break;
        }
        queue.push(pulled(next.value));
      }
      const head = queue[0];
      if (!head) return;
      yield head;
      queue.shift();
      if (head.copied) head.target.netns?.close();
    }
  } finally {
    for (const q of queue) {
      q.opened?.[Symbol.dispose]();
      if (q.copied) q.target.netns?.close();
    }
    items.return?.();
  }

  function pulled(target: Target): Queued<O> {
    if (looking && limits.wanted()) {
      let copy: Target;
      try {
        copy = { ...target, netns: target.netns?.dup() };
      } catch (err) {
        if (isFatalNetnsError(err)) throw err;
        looking = false;
        return { target, copied: false, idle: false };
      }
      try {
        return { target: copy, copied: true, ...ahead(copy) };
      } catch (err) {
        copy.netns?.close();
        throw err;
      }
    }
    return { target, copied: false, idle: false };
  }
}

/**
 * Whether to pull another target before the queue's head has its turn: an uncopied one must have
 * it before its handle is closed by the next pull; otherwise pull until `walks` targets after the
 * head have a walk in flight, or `depth` are queued.
 */
function wantsMore(queue: readonly Queued<unknown>[], depth: number, walks: number): boolean {
  const last = queue.at(-1);
  if (!last) return true;
  if (!last.copied || queue.length >= depth) return false;
  let inFlight = 0;
  for (let i = 1; i < queue.length; i++) if (!queue[i]!.idle) inFlight++;
  return inFlight < walks;
}
