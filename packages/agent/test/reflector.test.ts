/**
 * The reflector alone: a fake list/watch source answered by hand, a recording store, a clock moved
 * by hand. No server, no real timers. (agent-watch.test.ts runs it against the stand-in server.)
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ApiStatusError } from "../src/kube-api.js";
import { GivenUpError, Reflector, type ReflectorOptions } from "../src/reflector.js";
import {
  FakeSource,
  FixedBackoff,
  ManualClock,
  named,
  RecordingObserver,
  RecordingStore,
  settle,
} from "./kit/index.js";

const expired = () => new ApiStatusError(410, "Expired", "410 Expired: too old resource version");

function reflector(options: ReflectorOptions = {}) {
  const source = new FakeSource();
  const store = new RecordingStore();
  const observer = new RecordingObserver();
  const backoff = new FixedBackoff(800);
  const clock = new ManualClock();
  const r = new Reflector(source, store, observer, backoff, {
    clock,
    random: () => 0.5,
    watchTimeoutMs: 10_000,
    ...options,
  });
  r.start();
  return { r, source, store, observer, backoff, clock };
}

describe("Reflector", () => {
  test("lists page by page into one replacement, committed once whole; then watches from the list's version", async () => {
    const { r, source, store } = reflector({ pageSize: 2 });
    const first = await source.nextList();
    first.answer([named("a", "5"), named("b", "6")], "7", "token-1");
    const second = await source.nextList();
    assert.equal(second.request.continue, "token-1");
    assert.equal(second.request.limit, 2);
    assert.deepEqual(
      store.ops.map((o) => o[0]),
      ["replace", "add", "add"],
      "nothing committed between pages",
    );
    second.answer([named("c", "7")], "7");
    const watch = await source.nextWatch();
    assert.deepEqual(
      store.ops.map((o) => o[0]),
      ["replace", "add", "add", "add", "commit"],
    );
    assert.deepEqual(store.ops.at(-1), ["commit", 3]);
    assert.equal(watch.request.resourceVersion, "7");
    assert.equal(watch.request.timeoutSeconds, 15, "T·(1 + random), T = 10 s");
    assert.equal(r.resourceVersion(), "7");
    assert.ok(r.healthy());
    await r.stop();
  });

  test("watch events reach the store; a bookmark moves the version; a watch the server ends resumes at once from it", async () => {
    const { r, source, store, backoff } = reflector();
    (await source.nextList()).answer([], "10");
    const watch = await source.nextWatch();
    watch.open();
    watch.send({ type: "ADDED", object: named("a", "11") });
    watch.send({ type: "MODIFIED", object: named("a", "12") });
    watch.send({ type: "DELETED", object: named("a", "13") });
    watch.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "20" } } });
    assert.deepEqual(store.ops.slice(2), [
      ["put", named("a", "11")],
      ["put", named("a", "12")],
      ["delete", named("a", "13")],
    ]);
    assert.equal(r.resourceVersion(), "20");
    watch.end();
    const again = await source.nextWatch();
    assert.equal(again.request.resourceVersion, "20");
    assert.equal(backoff.calls, 0, "no back-off after a clean end");
    await r.stop();
  });

  test("a list failed half way is abandoned and asked again from the start after the back-off, on the clock", async () => {
    const { r, source, store, observer, clock } = reflector({ pageSize: 1 });
    (await source.nextList()).answer([named("a", "1")], "3", "t");
    (await source.nextList()).fail(new Error("cut short"));
    await observer.waitForFailures(1);
    assert.deepEqual(
      store.ops.map((o) => o[0]),
      ["replace", "add", "abandon"],
    );
    assert.equal(observer.failures[0]!.step, "list");
    assert.equal(observer.failures[0]!.delayMs, 800);
    await settle();
    assert.equal(source.calls.length, 2, "nothing asked before the back-off passed");
    assert.equal(r.healthy(), false, "never synced: not healthy");
    clock.advance(799);
    await settle();
    assert.equal(source.calls.length, 2);
    clock.advance(1);
    const retry = await source.nextList();
    assert.equal(retry.request.continue, undefined, "from the first page");
    await r.stop();
  });

  test("a watch's 410 lists again after the back-off; any other watch failure watches again from the same version", async () => {
    const { r, source, observer, clock } = reflector();
    (await source.nextList()).answer([], "10");
    (await source.nextWatch()).fail(new Error("connection reset"));
    await observer.waitForFailures(1);
    clock.advance(800);
    const rewatch = await source.nextWatch();
    assert.equal(rewatch.request.resourceVersion, "10");
    rewatch.fail(expired());
    await observer.waitForFailures(2);
    assert.equal(observer.failures[1]!.step, "watch");
    clock.advance(800);
    await source.nextList();
    await r.stop();
  });

  test("a silent watch is given up after its ask plus a margin; health lasts staleAfterMs after the last sign of life", async () => {
    const { r, source, observer, clock } = reflector({ staleAfterMs: 60_000 });
    (await source.nextList()).answer([], "10");
    const watch = await source.nextWatch();
    watch.open();
    // Asked 15 s; given up 1 s (a tenth of T, at least 1 s) after that with nothing sent.
    clock.advance(15_999);
    watch.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "11" } } });
    clock.advance(15_999);
    await settle();
    assert.equal(observer.failures.length, 0, "an event re-arms the limit");
    clock.advance(1);
    await observer.waitForFailures(1);
    assert.ok(watch.signal.aborted);
    assert.ok(observer.failures[0]!.err instanceof GivenUpError);
    assert.ok(r.healthy(), "still within staleAfterMs of the bookmark");
    clock.advance(60_000 - 16_000);
    assert.equal(r.healthy(), false);
    await r.stop();
  });

  test("a watch that ends at once with nothing is a failure (back-off); stop gives up the request in flight", async () => {
    const { r, source, observer, backoff, clock } = reflector();
    (await source.nextList()).answer([], "10");
    (await source.nextWatch()).end();
    await observer.waitForFailures(1);
    assert.equal(backoff.calls, 1);
    clock.advance(800);
    const watch = await source.nextWatch();
    await r.stop();
    assert.ok(watch.signal.aborted);
    assert.equal(r.healthy(), false);
    assert.equal(observer.failures.length, 1, "the stop is no failure");
  });
});
