/**
 * The pool's schedule with runners of the test's own (no worker, no kernel): the namespaces are cut
 * into runs in the walk's order, each runner takes the next run once its own is over (a held-up
 * runner takes fewer), the parts come back in the walk's order whichever ended first, and an abort
 * or a failed run stops the handing out while the runs in flight are awaited; the pool's size
 * follows cores and memory.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { runsOf, shareOut, WORKER_BYTES, workersFor } from "../../src/schedule/index.js";

/** A promise the test settles. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

const range = (from: number, to: number) => Array.from({ length: to - from }, (_, i) => from + i);

test("the pool is capped by memory as well as by cores: a quarter of the memory holds its workers", () => {
  const MiB = 1024 * 1024;
  // The agent's DaemonSet limit: 80 MiB for workers, 5 of them even on 16 cores.
  assert.equal(workersFor(16, 320 * MiB), Math.floor((320 * MiB) / 4 / WORKER_BYTES));
  assert.equal(workersFor(16, 320 * MiB), 5);
  assert.equal(workersFor(2, 320 * MiB), 2, "cores bound it first");
  assert.equal(workersFor(64, 64 * 1024 * MiB), 8, "never more than 8");
  assert.equal(workersFor(4, 32 * MiB), 1, "always one, however little memory");
});

test("runs: four a runner, at most 16 namespaces each, every place once in the walk's order", () => {
  const lengths = (count: number, runners: number) => runsOf(count, runners).map((r) => r.length);
  assert.deepEqual(lengths(101, 2), [...Array(7).fill(13), 10], "ceil(101 / 8) a run, the last shorter");
  assert.deepEqual(lengths(1000, 2), [...Array(62).fill(16), 8], "never more than 16");
  assert.deepEqual(lengths(3, 8), [1, 1, 1]);
  assert.deepEqual(lengths(0, 2), []);
  assert.deepEqual(runsOf(101, 2).flat(), range(0, 101));
});

test("a held-up runner takes fewer runs; the parts come back in the walk's order, not the order they ended", async () => {
  const held = gate();
  const taken: number[][] = [[], []];
  const outcome = await shareOut(8, 2, async (places, w) => {
    taken[w]!.push(...places);
    // Runner 0's first run ends only once runner 1 has run the last namespace.
    if (w === 0) await held.promise;
    if (places.includes(7)) held.open();
    return `part ${places.join(",")} on ${w}`;
  });
  assert.deepEqual(taken, [[0], range(1, 8)]);
  assert.deepEqual(
    outcome.done.map((d) => d.result),
    range(0, 8).map((i) => `part ${i} on ${i === 0 ? 0 : 1}`),
  );
  assert.deepEqual(outcome.failed, []);
  assert.deepEqual(outcome.left, []);
});

test("uneven runs: each place is run once, in runs of the walk's order, the last one shorter", async () => {
  const seen: (readonly number[])[] = [];
  const outcome = await shareOut(9, 2, async (places) => {
    seen.push(places);
    return places.length;
  });
  assert.deepEqual(
    outcome.done.map((d) => d.places),
    [[0, 1], [2, 3], [4, 5], [6, 7], [8]],
  );
  assert.deepEqual(
    seen.flat().sort((a, b) => a - b),
    range(0, 9),
  );
  assert.deepEqual(
    outcome.done.map((d) => d.result),
    [2, 2, 2, 2, 1],
  );
});

test("fewer namespaces than runners: only as many runners as namespaces are used", async () => {
  const runners = new Set<number>();
  const outcome = await shareOut(1, 4, async (_places, w) => {
    runners.add(w);
  });
  assert.deepEqual([...runners], [0]);
  assert.equal(outcome.done.length, 1);
  assert.deepEqual((await shareOut(0, 4, async () => assert.fail("no namespace, no run"))).done, []);
});

test("an abort mid-way: no run is handed out after it, the runs in flight end, the rest is left", async () => {
  const controller = new AbortController();
  const held = gate();
  const called: number[] = [];
  const outcome = await shareOut(
    8,
    2,
    async (places, w) => {
      called.push(...places);
      if (places.includes(3)) {
        controller.abort();
        held.open();
      }
      // Runner 0's run is in flight when the abort comes.
      if (w === 0 && places.includes(2)) await held.promise;
      return places[0];
    },
    controller.signal,
  );
  assert.deepEqual(called, [0, 1, 2, 3]);
  assert.deepEqual(
    outcome.done.map((d) => d.result),
    [0, 1, 2, 3],
    "the run in flight at the abort was awaited",
  );
  assert.deepEqual(outcome.left, range(4, 8));
  assert.deepEqual(outcome.failed, []);

  let runs = 0;
  const before = await shareOut(5, 2, async () => void runs++, AbortSignal.abort());
  assert.equal(runs, 0, "aborted before: nothing is run");
  assert.deepEqual(before.left, range(0, 5));
});

test("a runner that throws: its run is in `failed`, no run is handed out after, the others' parts are kept", async () => {
  const held = gate();
  const boom = new Error("worker died");
  const called: number[] = [];
  const outcome = await shareOut(8, 2, async (places, w) => {
    called.push(...places);
    if (places.includes(2)) {
      held.open();
      throw boom;
    }
    if (w === 0) await held.promise;
    return places[0];
  });
  assert.deepEqual(called, [0, 1, 2]);
  assert.deepEqual(
    outcome.done.map((d) => d.places),
    [[0], [1]],
    "the run in flight when the other failed was awaited",
  );
  assert.deepEqual(outcome.failed, [{ places: [2], error: boom }]);
  assert.deepEqual(outcome.left, range(3, 8));

  // A runner that throws before it returns a promise is the same.
  const sync = await shareOut(3, 1, (places) => {
    if (places.includes(1)) throw boom;
    return Promise.resolve(places[0]);
  });
  assert.deepEqual(
    sync.failed.map((f) => f.places),
    [[1]],
  );
  assert.deepEqual(sync.left, [2]);
});
