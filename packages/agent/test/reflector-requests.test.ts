/**
 * What the agent asks of the API server, request by request, against a stand-in of its own: the
 * requests a start, a watch's 410 and a list's 410 make, with and without streaming lists.
 */
import assert from "node:assert/strict";
import { afterEach, describe, test } from "node:test";
import {
  RecordingTerminator,
  type RequestSeen,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  udpSlice,
  until,
} from "./kit/index.js";

const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function scene(
  streamingLists: boolean,
): Promise<{ api: StandInApiServer; t: TestAgent; terminator: RecordingTerminator }> {
  const api = await StandInApiServer.start();
  cleanups.push(() => api.close());
  api.streamingLists = streamingLists;
  for (let i = 0; i < 3; i++) api.apply(udpSlice(`svc-${i}`, "svc", 53, [`10.60.0.${i + 1}`]));
  const dir = await scratchDir("requests");
  cleanups.push(dir.remove);
  const terminator = new RecordingTerminator();
  const t = await startTestAgent(api, { stateDir: dir.path, terminator, watch: { pageSize: 2 } });
  cleanups.push(t.stop);
  return { api, t, terminator };
}

/** A request as the assertions name it. */
function asked(r: RequestSeen): string {
  const parts: string[] = [r.kind];
  if (r.resourceVersion !== undefined) parts.push(`rv=${r.resourceVersion}`);
  if (r.limit !== undefined) parts.push(`limit=${r.limit}`);
  if (r.continue !== undefined) parts.push("continue");
  if (r.sendInitialEvents) parts.push(`stream(${r.resourceVersionMatch})`);
  parts.push(`-> ${r.answer}`);
  return parts.join(" ");
}

/** Resolves once the requests since `from` end with a plain watch served; returns them named. */
async function untilWatching(api: StandInApiServer, from: number): Promise<string[]> {
  const since = () => api.requests.slice(from);
  await until(
    () => {
      const last = since().at(-1);
      return last?.kind === "watch" && last.answer === "ok" && api.openWatches === 1;
    },
    10_000,
    "a watch served",
  );
  return since().map(asked);
}

describe("the agent's requests, as client-go's reflector makes them", () => {
  test("no streaming lists: a start lists at 0; a watch's 410 relists at the last version; a list's 410 lists consistently, paged", async () => {
    const { api } = await scene(false);
    const rv = api.resourceVersion;
    assert.deepEqual(await untilWatching(api, 0), [
      "watch rv= stream(NotOlderThan) -> status 422",
      "list rv=0 limit=2 -> ok",
      `watch rv=${rv} -> ok`,
    ]);
    let from = api.requests.length;
    api.expireWatches();
    assert.deepEqual(await untilWatching(api, from), [`list rv=${rv} -> ok`, `watch rv=${rv} -> ok`]);
    from = api.requests.length;
    api.fail("list", { code: 410, times: 1 });
    api.expireWatches();
    assert.deepEqual(await untilWatching(api, from), [
      `list rv=${rv} -> expired`,
      "list limit=2 -> ok",
      "list limit=2 continue -> ok",
      `watch rv=${rv} -> ok`,
    ]);
  });

  test("streaming lists: a start is one watch, synced at its end bookmark; a watch's 410 streams again from the last version", async () => {
    const { api, t, terminator } = await scene(true);
    const rv = api.resourceVersion;
    assert.deepEqual(await untilWatching(api, 0), ["watch rv= stream(NotOlderThan) -> ok"]);
    assert.equal(t.logs.filter((l) => l.msg === "endpointslices synced")[0]!.slices, 3);
    api.apply(udpSlice("svc-0", "svc", 53, []));
    await terminator.waitForBatches(1);
    assert.deepEqual(terminator.batches, [["10.60.0.1:53/udp"]]);
    const from = api.requests.length;
    api.expireWatches();
    const changed = api.resourceVersion;
    assert.notEqual(changed, rv);
    assert.deepEqual(await untilWatching(api, from), [`watch rv=${changed} stream(NotOlderThan) -> ok`]);
  });
});
