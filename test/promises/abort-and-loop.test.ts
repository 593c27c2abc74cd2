/**
 * sockdiag/promises on a large scene: an AbortSignal stops a long destroy part-way with a report
 * that balances and matches what the kernel still holds; the caller's event loop keeps running
 * while 50,000 sockets are listed; breaking out of `for await` releases the worker's sockets.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import type { DestroyReport } from "sockdiag";
import { AbortError, destroySockets, iterateSockets, listSockets } from "sockdiag/promises";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Population,
  type ScratchNetns,
  socketFds,
} from "../kit/index.js";

const TOTAL = 50_000;
const TARGETS = 3_000;
const TARGET = { address: "127.0.0.10", port: 5353 };

describeAsRoot("sockdiag/promises at scale", () => {
  let ns: ScratchNetns;
  let population: Population;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("promises-scale");
    population = await Population.start({
      netnsPath: ns.path,
      total: TOTAL,
      target: TARGET,
      targetCount: TARGETS,
    });
  });

  after(async () => {
    await population?.stop();
    await ns?.remove();
  });

  test("a setInterval keeps ticking while 50,000 sockets are listed", async () => {
    let ticks = 0;
    const timer = setInterval(() => {
      ticks++;
    }, 1);
    try {
      const sockets = await listSockets({ netns: ns.name, protocols: ["udp"] });
      assert.ok(sockets.length >= TOTAL, `${sockets.length} listed`);
    } finally {
      clearInterval(timer);
    }
    assert.ok(ticks > 0, "the interval ticked during the listing");
  });

  test("breaking out of for await releases the worker's netlink sockets", async () => {
    await listSockets({ netns: ns.name, protocols: ["unix"], states: [] as string[] }).catch(() => []);
    const before = socketFds();
    let seen = 0;
    let during = 0;
    for await (const _ of iterateSockets({ netns: ns.name, protocols: ["udp"] })) {
      if (++seen === 10) {
        during = socketFds();
        break;
      }
    }
    assert.ok(during > before, "the stream held a netlink socket while open");
    // Calls run in order in the worker: once this one is answered, the stream's close was handled.
    await listSockets({ netns: ns.name, protocols: ["tcp"] });
    assert.equal(socketFds(), before);
  });

  test("an AbortSignal stops a listing: AbortError, its netlink socket closed, the next listing whole", async () => {
    await listSockets({ netns: ns.name, protocols: ["tcp"] });
    const before = socketFds();
    const controller = new AbortController();
    // Over every namespace: the abort ends the whole walk, not one namespace's part of it.
    const listing = listSockets({ netns: "all", protocols: ["udp"], signal: controller.signal });
    // The call is in the worker by now; the dump of this namespace's 50,000 sockets takes many chunks.
    setImmediate(() => controller.abort());
    await assert.rejects(listing, (err: unknown) => err instanceof AbortError);
    const all = await listSockets({ netns: ns.name, protocols: ["udp"] });
    assert.ok(all.length >= TOTAL, `${all.length} listed after the abort`);
    assert.equal(socketFds(), before);
  });

  test("an AbortSignal stops a destroy part-way: the report balances and says what was destroyed", async () => {
    const controller = new AbortController();
    const query = {
      netns: ns.name,
      protocols: ["udp"] as const,
      filter: `dst ${TARGET.address}:${TARGET.port}`,
    };
    let error: unknown;
    try {
      await destroySockets({
        ...query,
        batchSize: 64,
        onOutcome: (_s, outcome) => {
          if (outcome === "destroyed") controller.abort(new Error("enough"));
        },
        signal: controller.signal,
      });
    } catch (err) {
      error = err;
    }
    assert.ok(error instanceof AbortError, `rejected with AbortError: ${error}`);
    assert.equal(error.code, "ABORT_ERR");
    assert.equal((error.cause as Error).message, "enough");
    const report = error.report as DestroyReport;
    assert.ok(report.destroyed > 0 && report.destroyed < TARGETS, `destroyed ${report.destroyed}`);
    assert.equal(report.matched, report.destroyed + report.gone + report.failed.length + report.skipped);
    assert.ok(report.stops.some((s) => s.code === "ABORT_ERR"));
    const left = await listSockets({ ...query, states: ["established"] });
    assert.equal(left.length, TARGETS - report.destroyed);
  });
});
