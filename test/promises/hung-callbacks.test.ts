/**
 * sockdiag/promises never hangs on a caller's callback: a predicate that never settles (or a
 * thenable that never calls back) is answered when the call aborts, or past `callbackTimeout`, and
 * the call settles with a typed error carrying a balanced report; nothing is destroyed, and the
 * next calls work (another namespace's listing, the pool's terminateMany). A worker silent past
 * its bound after an abort is stopped and replaced. No timing is asserted: the bounds are small
 * and each step awaits the condition it needs.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { setTimeout as sleep } from "node:timers/promises";
import * as sync from "sockdiag";
import * as promises from "sockdiag/promises";
import { client, WorkerClient } from "../../src/promises/client.js";
import { terminateShared } from "../../src/promises/pool.js";
import { poolSize } from "../../src/schedule/index.js";
import { describeAsRoot } from "../kit/index.js";
import { balances, orRejection, type Report, useCallbackScene } from "./callback-scene.js";

const silentWorker = new URL("../kit/silent-worker.js", import.meta.url);

/** A predicate that never settles, and a promise of its first call. */
function hung<T>(answer: () => T) {
  let called!: () => void;
  const first = new Promise<void>((resolve) => {
    called = resolve;
  });
  return {
    first,
    predicate: () => {
      called();
      return answer();
    },
  };
}

const never = () => new Promise<boolean>(() => {});
// biome-ignore lint/suspicious/noThenProperty: a thenable that never calls back is the case under test.
const silentThenable = () => ({ then() {} }) as unknown as Promise<boolean>;

describeAsRoot("sockdiag/promises with callbacks that never settle", () => {
  const scene = useCallbackScene("promises-hung");
  const { query, connected, backend } = scene;

  /** Calls that must work after a hung one: another namespace's listing, a dry pool termination. */
  async function laterCallsWork(): Promise<void> {
    const own = await promises.listSockets({ protocols: ["udp"] });
    assert.ok(Array.isArray(own));
    const report = await new promises.BackendTerminator({ dryRun: true, conntrack: false }).terminateMany([
      backend(),
    ]);
    const ours = report.namespaces.find((n) => n.netns === scene.netns);
    assert.equal(ours?.report?.matched, scene.clients, "the pool found the scene's clients");
  }

  for (const [what, answer] of [
    ["a promise that never settles", never],
    ["a thenable that never calls back", silentThenable],
  ] as const) {
    test(`abort during ${what}: destroySockets rejects with AbortError and a balanced report; later calls work`, async () => {
      const controller = new AbortController();
      const { first, predicate } = hung(answer);
      const call = promises.destroySockets({ ...query(), predicate, signal: controller.signal });
      await first;
      controller.abort(new Error("enough"));
      const err = await call.then(...orRejection);
      assert.ok(err instanceof promises.AbortError, `AbortError: ${err}`);
      assert.equal((err.cause as Error).message, "enough");
      balances(err.report as Report);
      assert.equal((err.report as Report).destroyed, 0);
      assert.equal(connected(), scene.clients);
      await laterCallsWork();
    });
  }

  test("abort during a hung predicate of a pool termination settles it with AbortError; later calls work", async () => {
    const controller = new AbortController();
    const { first, predicate } = hung(never);
    const call = new promises.BackendTerminator({ conntrack: false, predicate }).terminateMany([backend()], {
      signal: controller.signal,
    });
    await first;
    controller.abort();
    const err = await call.then(...orRejection);
    assert.ok(err instanceof promises.AbortError, `AbortError: ${err}`);
    const report = err.report as sync.BatchTerminationReport;
    balances(report.total as Report);
    assert.equal(report.total.destroyed, 0);
    assert.equal(connected(), scene.clients);
    await laterCallsWork();
  });

  test("a predicate past callbackTimeout is a PredicateError caused by CallbackTimeoutError; nothing destroyed", async () => {
    const err = await promises
      .destroySockets({ ...query(), predicate: never, callbackTimeout: 20 })
      .then(...orRejection);
    assert.ok(err instanceof sync.errors.PredicateError, `PredicateError: ${err}`);
    assert.ok(err.cause instanceof sync.errors.CallbackTimeoutError, `cause: ${err.cause}`);
    assert.equal(err.cause.callback, "predicate");
    balances(err.report as Report);
    assert.equal(connected(), scene.clients);
    await laterCallsWork();
  });

  test("a logger past callbackTimeout is reported once in callbackErrors; the termination completes", async () => {
    const logger = { info: never, warn: never };
    const report = await new promises.BackendTerminator({
      netns: scene.netns,
      conntrack: false,
      dryRun: true,
      logger,
      // One logger call (the namespace's), without the one pass's line.
      onePass: "off",
    }).terminate(backend(), { callbackTimeout: 20 });
    assert.equal(report.total.matched, scene.clients);
    assert.deepEqual(
      report.callbackErrors.map((e) => [e.name, (e as { callback?: string }).callback]),
      [["CallbackTimeoutError", "logger.info"]],
    );
  });

  test("a pool worker silent after an abort is stopped: its namespaces are in the report as unknown", async () => {
    assert.ok(poolSize() >= 2, `this test needs two cores (${poolSize()})`);
    const silent = new WorkerClient({ script: silentWorker, silence: 20 });
    const controller = new AbortController();
    // The silent worker has its run once any namespace is done: runs are handed out at once. A
    // walk, so that every namespace is one to share out (the one pass may keep one, or none).
    const config = {
      dryRun: true,
      conntrack: false,
      onePass: "off" as const,
      onNamespace: () => controller.abort(),
    };
    const err = await terminateShared(config, [backend()], {}, { signal: controller.signal }, (i) =>
      i === 0 ? client : silent,
    ).then(...orRejection);
    assert.ok(err instanceof promises.AbortError, `AbortError: ${err}`);
    const report = err.report as sync.BatchTerminationReport;
    const unknown = report.namespaces.filter((n) => n.error instanceof sync.errors.WorkerStoppedError);
    assert.ok(unknown.length > 0, "the stopped worker's namespaces are reported");
    assert.ok(report.namespaces.length > unknown.length, "the other worker's namespaces are reported");
    assert.equal(report.ok, false);
    balances(report.total as Report);
    await laterCallsWork();
  });

  test("a callback slower than the silence bound after an abort is not the worker's silence", async () => {
    const own = new WorkerClient({ silence: 2000 });
    const controller = new AbortController();
    const { first, predicate } = hung(never);
    let warned = false;
    // Told of the namespace the abort ended: the worker waits on this thread, many bounds long.
    const logger = {
      info() {},
      warn: async () => {
        await sleep(5000);
        warned = true;
      },
    };
    const call = own.call(
      "terminate",
      [{ netns: scene.netns, conntrack: false, predicate, logger }, backend(), {}],
      { signal: controller.signal },
    );
    await first;
    controller.abort();
    const err = await call.then(...orRejection);
    assert.ok(err instanceof promises.AbortError, `AbortError: ${err}`);
    assert.ok(warned, "the logger was heard out");
    assert.equal(connected(), scene.clients);
  });

  test("callbackTimeout must be a whole number of ms", async () => {
    await assert.rejects(
      promises.destroySockets({ ...query(), predicate: () => false, callbackTimeout: 0 }),
      (e: unknown) => e instanceof sync.errors.QueryError && e.field === "callbackTimeout",
    );
  });
});

test("a worker silent past its bound after an abort is stopped; the next call gets a new one", async () => {
  const silent = new WorkerClient({ script: silentWorker, silence: 20 });
  const controller = new AbortController();
  const call = silent.call("probe", [], { signal: controller.signal });
  // The stand-in is blocked for good once it has the call; the abort reaches it no more than that.
  setImmediate(() => controller.abort());
  const err = await call.then(...orRejection);
  assert.ok(err instanceof sync.errors.WorkerStoppedError, `WorkerStoppedError: ${err}`);
  assert.ok(err.cause instanceof promises.AbortError);
  assert.equal(await silent.call("sharedPlan", [{}, []], undefined), "sharedPlan");
});

test("an aborted call queued behind a running one does not get the worker stopped", async () => {
  const worker = new WorkerClient({ script: silentWorker, silence: 20 });
  const hold = new SharedArrayBuffer(4);
  const running = worker.call("destroySocket", [hold] as never, undefined);
  const controller = new AbortController();
  const queued = worker.call("sharedPlan", [{}, []], { signal: controller.signal });
  controller.abort();
  // Many silence bounds pass while the call before the aborted one holds the worker: no condition
  // to await here but time.
  await sleep(200);
  Atomics.store(new Int32Array(hold), 0, 1);
  Atomics.notify(new Int32Array(hold), 0);
  assert.equal(await running, "destroySocket");
  assert.equal(await queued, "sharedPlan");
});
