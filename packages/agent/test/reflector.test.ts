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
    streamingLists: false,
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
    assert.deepEqual(first.request, { resourceVersion: "0", limit: 2 });
    assert.deepEqual(second.request, { continue: "token-1", limit: 2 });
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

  test("lists as client-go: at 0 first, at the last version synced after a watch's 410 (unpaged), consistently (paged) at once after a list's 410", async () => {
    const { r, source, observer, clock } = reflector({ pageSize: 2 });
    const first = await source.nextList();
    assert.deepEqual(first.request, { resourceVersion: "0", limit: 2 });
    first.answer([named("a", "5"), named("b", "6"), named("c", "7")], "7");
    const watch = await source.nextWatch();
    watch.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "9" } } });
    watch.fail(expired());
    await observer.waitForFailures(1);
    clock.advance(800);
    const relist = await source.nextList();
    assert.deepEqual(
      relist.request,
      { resourceVersion: "9" },
      "not older than the last version seen, from the cache",
    );
    relist.fail(expired());
    const consistent = await source.nextList();
    assert.deepEqual(consistent.request, { limit: 2 }, "at once, no resourceVersion, paged");
    assert.equal(
      observer.failures.length,
      1,
      "the list's 410 is no failure: the consistent list follows at once",
    );
    consistent.answer([named("a", "5"), named("b", "6")], "12", "t");
    const next = await source.nextList();
    assert.deepEqual(next.request, { limit: 2, continue: "t" });
    next.answer([], "12");
    (await source.nextWatch()).fail(expired());
    await observer.waitForFailures(2);
    clock.advance(800);
    assert.deepEqual((await source.nextList()).request, { resourceVersion: "12" }, "back to the cache");
    assert.equal(r.resourceVersion(), "12");
    await r.stop();
  });

  test("a consistent list answered 410 too (a continue token expired) backs off; a 504 too large resource version counts as 410", async () => {
    const { r, source, observer, clock } = reflector();
    (await source.nextList()).fail(
      new ApiStatusError(504, "Timeout", "Too large resource version: 9, current: 8", true),
    );
    const consistent = await source.nextList();
    assert.deepEqual(consistent.request, { limit: 500 });
    consistent.fail(expired());
    await observer.waitForFailures(1);
    clock.advance(800);
    assert.deepEqual((await source.nextList()).request, { limit: 500 }, "still consistent");
    await r.stop();
  });

  test("a list at 0 answered in pages (no watch cache): relists are paged too", async () => {
    const { r, source, observer, clock } = reflector({ pageSize: 1 });
    (await source.nextList()).answer([named("a", "1")], "3", "t");
    (await source.nextList()).answer([named("b", "2")], "3");
    (await source.nextWatch()).fail(expired());
    await observer.waitForFailures(1);
    clock.advance(800);
    assert.deepEqual((await source.nextList()).request, { resourceVersion: "3", limit: 1 });
    await r.stop();
  });

  test("a streaming list: its events are staged, applied whole at the bookmark that ends them only; the same watch goes on", async () => {
    const { r, source, store, observer } = reflector({ streamingLists: true });
    const stream = await source.nextWatch();
    assert.deepEqual(stream.request, { resourceVersion: "", timeoutSeconds: 15, sendInitialEvents: true });
    stream.open();
    stream.send({ type: "ADDED", object: named("a", "4") });
    stream.send({ type: "ADDED", object: named("b", "5") });
    stream.send({ type: "BOOKMARK", object: { metadata: { resourceVersion: "6" } } });
    // Nothing to delete before the state is whole: not counted in it.
    stream.send({ type: "DELETED", object: named("c", "6") });
    assert.deepEqual(
      store.ops.map((o) => o[0]),
      ["replace", "add", "add"],
      "a plain bookmark ends nothing",
    );
    assert.equal(r.resourceVersion(), "", "not synced yet");
    stream.send({
      type: "BOOKMARK",
      object: { metadata: { resourceVersion: "7", annotations: { "k8s.io/initial-events-end": "true" } } },
    });
    await settle();
    assert.deepEqual(store.ops.at(-1), ["commit", 2]);
    assert.equal(r.resourceVersion(), "7");
    stream.send({ type: "DELETED", object: named("a", "8") });
    assert.deepEqual(store.ops.at(-1), ["delete", named("a", "8")]);
    stream.fail(expired());
    await observer.waitForFailures(1);
    assert.equal(observer.failures[0]!.step, "watch");
    assert.equal(source.calls.filter((c) => c.kind === "list").length, 0, "never a list");
    await r.stop();
  });

  test("a streaming list refused (422) or ended before its bookmark: a list at 0 at once, and lists from then on; a 503 is no refusal", async () => {
    const refused = new ApiStatusError(422, "Invalid", "422 Invalid: sendInitialEvents is forbidden");
    const { r, source, observer, store, clock } = reflector({ streamingLists: true });
    (await source.nextWatch()).fail(new ApiStatusError(503, "ServiceUnavailable", "503"));
    await observer.waitForFailures(1);
    clock.advance(800);
    const stream = await source.nextWatch();
    assert.equal(stream.request.sendInitialEvents, true, "streams again after a 503");
    stream.fail(refused);
    const list = await source.nextList();
    assert.deepEqual(list.request, { resourceVersion: "0", limit: 500 });
    assert.deepEqual(observer.refusals, [refused]);
    list.answer([], "5");
    (await source.nextWatch()).fail(expired());
    await observer.waitForFailures(2);
    clock.advance(800);
    assert.deepEqual((await source.nextList()).request, { resourceVersion: "5" }, "no stream asked again");
    await r.stop();

    const early = reflector({ streamingLists: true });
    const cut = await early.source.nextWatch();
    cut.send({ type: "ADDED", object: named("a", "4") });
    cut.end();
    assert.deepEqual((await early.source.nextList()).request, { resourceVersion: "0", limit: 500 });
    assert.deepEqual(
      early.store.ops.map((o) => o[0]),
      ["replace", "add", "abandon", "replace"],
    );
    assert.equal(early.observer.refusals.length, 1);
    await early.r.stop();
    assert.equal(store.ops.filter((o) => o[0] === "commit").length, 1);
  });

  test("a list answer is given up only once no item came for the list timeout, however long it streams", async () => {
    const { r, source, observer, clock } = reflector({ listTimeoutMs: 1000 });
    const list = await source.nextList();
    for (let i = 0; i < 5; i++) {
      clock.advance(600);
      list.item(named(`s${i}`, "1"));
    }
    await settle();
    assert.equal(observer.failures.length, 0, "3 s of items, none 1 s apart");
    clock.advance(999);
    await settle();
    assert.equal(observer.failures.length, 0);
    clock.advance(1);
    await observer.waitForFailures(1);
    assert.ok(list.signal.aborted);
    assert.match(String((observer.failures[0]!.err as Error).message), /a list answer: nothing came for 1 s/);
    await r.stop();
  });
});
