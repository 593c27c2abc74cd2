/**
 * The operations of sockdiag/promises are typed: the build compiles this file only if a wrong name,
 * a wrong argument or a table that strays from the map is a compile error, and a result or a
 * stream's item arrives with its type (an `unknown` result fails the assignments below). The
 * worker, for its part, refuses a name outside its tables, even one every object has.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { type ConntrackEntry, iterateConntrack } from "../../src/conntrack/index.js";
import type { Socket } from "../../src/diag/socket.js";
import { calls, streams } from "../../src/promises/calls.js";
import { client } from "../../src/promises/client.js";
import { drain } from "../../src/promises/streams.js";
import type { NamespacedDestroyReport, ProbeResult } from "../../src/sockets/index.js";

// Compiled, never run: each line is a claim about the types.
const claims = [
  // @ts-expect-error: no call of that name
  () => client.call("listSocket", [{}], undefined),
  // @ts-expect-error: a stream is opened, not called
  () => client.call("iterateSockets", [{}], undefined),
  // @ts-expect-error: destroySockets takes a query, not a protocol name
  () => client.call("destroySockets", ["udp"], undefined),
  // @ts-expect-error: the signal stays on the caller's thread, apart from the arguments
  () => client.call("destroySockets", [{ all: true, signal: AbortSignal.timeout(1) }], undefined),
  // @ts-expect-error: probe takes no arguments
  () => client.call("probe", [{}], undefined),
  // A callback may answer with a Promise: the worker waits for it.
  () => client.call("destroySockets", [{ all: true, predicate: async () => false }], undefined),
  async (socket: Socket) => {
    const report: NamespacedDestroyReport = await client.call("destroySockets", [{ all: true }], undefined);
    const outcome: "destroyed" | "gone" = await client.call("destroySocket", [socket], undefined);
    const probed: ProbeResult = await client.call("probe", [], undefined);
    // @ts-expect-error: probe answers a ProbeResult
    const wrong: number = await client.call("probe", [], undefined);
    return [report, outcome, probed, wrong];
  },
  async () => {
    for await (const s of drain(client.open("iterateSockets", [{}], undefined))) {
      const socket: Socket = s;
      void socket;
    }
    for await (const e of drain(client.open("iterateConntrack", [{}], undefined))) {
      const entry: ConntrackEntry = e;
      void entry;
    }
    // @ts-expect-error: no stream of that name
    client.open("watchSocket", [{}], undefined);
  },
  () => {
    // @ts-expect-error: each call answers what the map says
    const wrongResult: typeof calls = { ...calls, probe: () => 1 };
    // @ts-expect-error: no call outside the map
    const extra: typeof calls = { ...calls, listSocket: () => ({ failures: [] }) };
    const { probe: _probe, ...withoutProbe } = calls;
    // @ts-expect-error: every call of the map is there
    const missing: typeof calls = withoutProbe;
    // @ts-expect-error: a stream yields the items of the map (sockets, not conntrack entries)
    const wrongItems: typeof streams = { ...streams, watchSockets: () => iterateConntrack() };
    return [wrongResult, extra, missing, wrongItems];
  },
];

test("the type claims above compiled (they are checked by the build, not here)", () => {
  assert.equal(claims.length, 9);
});

test("the worker refuses a call or a stream outside its tables, even a name every object has", async () => {
  for (const op of ["listSocket", "toString", "constructor"]) {
    // Cast: a caller outside the types, which only a cast can write.
    await assert.rejects(client.call(op as "probe", [], undefined), {
      code: "ERR_SOCKDIAG_MISUSE",
      message: `sockdiag/promises: no call ${op}`,
    });
    await assert.rejects(drain(client.open(op as "iterateSockets", [{}], undefined)).next(), {
      code: "ERR_SOCKDIAG_MISUSE",
      message: `sockdiag/promises: no stream ${op}`,
    });
  }
});
