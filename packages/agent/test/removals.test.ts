import assert from "node:assert/strict";
import { describe, test } from "node:test";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { type BackendKey, keyText, parseKeyText } from "../src/backend.js";
import { EndpointCache } from "../src/endpoint-cache.js";
import { type Removal, RemovalTracker, type TerminatingPolicy } from "../src/removals.js";
import { objectId, readSlice, type SliceContent } from "../src/slice.js";
import { endpointSlice, ManualClock, type SliceSpec, TurnCounter, udpSlice } from "./kit/index.js";

const UDP = new Set(["udp"] as const);
const content = (s: V1EndpointSlice): SliceContent => readSlice(s, UDP).content!;

/** Cache + tracker + clock, with every due batch taken at once. */
function scene(policy: TerminatingPolicy = "terminate", coalesceMs = 1000) {
  const clock = new ManualClock();
  const cache = new EndpointCache();
  const batches: string[][] = [];
  const taken: Removal[][] = [];
  const tracker: RemovalTracker = new RemovalTracker(cache, {
    policy,
    coalesceMs,
    clock,
    onDue: () => {
      const due = tracker.take();
      if (due.length > 0) {
        taken.push(due);
        batches.push(due.map((r) => keyText(r.key)).sort());
        tracker.settled(due);
      }
    },
  });
  return {
    clock,
    cache,
    tracker,
    batches,
    taken,
    put: (s: V1EndpointSlice) => tracker.observe(cache.put(content(s))),
    remove: (s: V1EndpointSlice) => tracker.observe(cache.remove(objectId(s)!.id)),
  };
}

describe("EndpointCache and RemovalTracker", () => {
  test("a backend that leaves its Service's union is one removal, after the coalescing window", () => {
    const s = scene();
    s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.1", "10.0.0.2"]));
    s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.2"]));
    s.clock.advance(999);
    assert.deepEqual(s.batches, []);
    s.clock.advance(1);
    assert.deepEqual(s.batches, [["10.0.0.1:53/udp"]]);
    assert.deepEqual(s.taken[0]![0]!.services, ["default/dns"]);
  });

  test("an endpoint moved between two slices of its Service is no removal, in either order", () => {
    for (const deleteFirst of [true, false]) {
      const s = scene();
      const a = udpSlice("dns-a", "dns", 53, ["10.0.0.1", "10.0.0.2"]);
      s.put(a);
      s.put(udpSlice("dns-b", "dns", 53, ["10.0.0.3"]));
      if (deleteFirst) {
        s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.2"]));
        s.clock.advance(500);
        s.put(udpSlice("dns-b", "dns", 53, ["10.0.0.3", "10.0.0.1"]));
      } else {
        s.put(udpSlice("dns-b", "dns", 53, ["10.0.0.3", "10.0.0.1"]));
        s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.2"]));
      }
      s.clock.advance(5000);
      assert.deepEqual(s.batches, [], `delete first: ${deleteFirst}`);
      assert.equal(s.cache.status(parseKeyText("10.0.0.1:53/udp")!), "ready");
    }
  });

  test("a deleted slice removes only what no other slice lists", () => {
    const s = scene();
    const a = udpSlice("dns-a", "dns", 53, ["10.0.0.1", "10.0.0.2"]);
    s.put(a);
    s.put(udpSlice("dns-b", "dns", 53, ["10.0.0.2"]));
    s.remove(a);
    s.clock.advance(1000);
    assert.deepEqual(s.batches, [["10.0.0.1:53/udp"]]);
  });

  test("a backend still listed by another Service is no removal", () => {
    const s = scene();
    s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.1"]));
    s.put(udpSlice("other-a", "other", 53, ["10.0.0.1"]));
    s.put(udpSlice("dns-a", "dns", 53, []));
    s.clock.advance(5000);
    assert.deepEqual(s.batches, []);
    assert.deepEqual(s.cache.servicesOf(parseKeyText("10.0.0.1:53/udp")!), ["default/other"]);
  });

  test("a terminating backend is removed with the terminate policy and kept with keep", () => {
    const terminating = endpointSlice({
      name: "dns-a",
      service: "dns",
      ports: [{ port: 53, protocol: "UDP" }],
      endpoints: [
        { addresses: ["10.0.0.1"], ready: false, serving: true, terminating: true },
        { addresses: ["10.0.0.2"] },
      ],
    });
    for (const policy of ["terminate", "keep"] as const) {
      const s = scene(policy);
      s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.1", "10.0.0.2"]));
      s.put(terminating);
      s.clock.advance(1000);
      assert.deepEqual(s.batches, policy === "terminate" ? [["10.0.0.1:53/udp"]] : [], policy);
      s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.2"]));
      s.clock.advance(1000);
      assert.deepEqual(s.batches, [["10.0.0.1:53/udp"]], `${policy}: removed once`);
    }
  });

  /** A UDP slice of Service `service`: each endpoint "ADDRESS" (ready) or "ADDRESS~" (serving, terminating). */
  const dns = (name: string, service: string, endpoints: string[], more: Partial<SliceSpec> = {}) =>
    endpointSlice({
      name,
      service,
      ports: [{ name: "dns", port: 53, protocol: "UDP" }],
      endpoints: endpoints.map((e) =>
        e.endsWith("~")
          ? { addresses: [e.slice(0, -1)], ready: false, serving: true, terminating: true }
          : { addresses: [e], ready: true, serving: true, terminating: false },
      ),
      ...more,
    });
  const A = "10.0.0.1:53/udp";
  /** The key a text names. */
  const k = (text: string) => parseKeyText(text)!;

  test("the only serving backend, terminating, stays live; its removal comes with a ready replacement, and goes with it", () => {
    const s = scene();
    s.put(dns("dns-a", "dns", ["10.0.0.1"]));
    s.put(dns("dns-a", "dns", ["10.0.0.1~"]));
    s.clock.advance(60_000);
    assert.deepEqual(s.batches, [], "kube-proxy falls back to it: no removal");
    assert.equal(s.cache.status(k(A)), "fallback");
    // The replacement comes ready in another slice, goes before the window ends, then comes back.
    s.put(dns("dns-b", "dns", ["10.0.0.2"]));
    assert.equal(s.cache.status(k(A)), "terminating");
    s.clock.advance(500);
    s.put(dns("dns-b", "dns", []));
    s.clock.advance(60_000);
    assert.deepEqual(s.batches, [["10.0.0.2:53/udp"]], "A live again before its removal was due");
    s.put(dns("dns-b", "dns", ["10.0.0.2"]));
    s.clock.advance(1000);
    assert.deepEqual(s.batches[1], [A]);
    assert.deepEqual(s.taken[1]![0]!.services, ["default/dns"]);
  });

  test("a replacement counts only in the terminating backend's group: Service, port name, protocol, IP family", () => {
    const s = scene();
    s.put(dns("dns-a", "dns", ["10.0.0.1~"]));
    // Ready endpoints kube-proxy would not send A's clients to.
    s.put(dns("other", "other", ["10.0.0.2"]));
    s.put(dns("dns-v6", "dns", ["fd00::2"], { addressType: "IPv6" }));
    s.put(dns("dns-named", "dns", ["10.0.0.3"], { ports: [{ name: "dns-alt", port: 53, protocol: "UDP" }] }));
    s.put(dns("dns-tcp", "dns", ["10.0.0.4"], { ports: [{ name: "dns", port: 53, protocol: "TCP" }] }));
    s.put(dns("dns-unready", "dns", [], { endpoints: [{ addresses: ["10.0.0.5"], ready: false }] }));
    s.clock.advance(60_000);
    assert.deepEqual(s.batches, []);
    assert.equal(s.cache.status(k(A)), "fallback");
    // The same group, even on another port number (a named target port): kube-proxy sends them there.
    s.put(dns("dns-b", "dns", ["10.0.0.6"], { ports: [{ name: "dns", port: 5353, protocol: "UDP" }] }));
    s.clock.advance(1000);
    assert.deepEqual(s.batches, [[A]]);
  });

  test("an address listed by two Services keeps its clients while either still routes to it", () => {
    const s = scene();
    s.put(dns("one-a", "one", ["10.0.0.1~"]));
    s.put(dns("two-a", "two", ["10.0.0.1~"]));
    s.put(dns("one-b", "one", ["10.0.0.2"]));
    s.clock.advance(60_000);
    assert.deepEqual(s.batches, [], "Service two still falls back to it");
    s.put(dns("two-b", "two", ["10.0.0.3"]));
    s.clock.advance(1000);
    assert.deepEqual(s.batches, [[A]]);
    assert.deepEqual(s.taken[0]![0]!.services.sort(), ["default/one", "default/two"]);
  });

  test("serving: false is a removal at once, the only endpoint or not, terminating or not", () => {
    for (const conditions of [
      { ready: false, serving: false, terminating: true },
      { ready: false, serving: false, terminating: false },
    ]) {
      const s = scene();
      s.put(dns("dns-a", "dns", ["10.0.0.1"]));
      s.put(dns("dns-a", "dns", [], { endpoints: [{ addresses: ["10.0.0.1"], ...conditions }] }));
      s.clock.advance(1000);
      assert.deepEqual(s.batches, [[A]], JSON.stringify(conditions));
    }
  });

  test("keep: a terminating backend keeps its clients, a ready replacement or not, until it stops serving", () => {
    const s = scene("keep");
    s.put(dns("dns-a", "dns", ["10.0.0.1~", "10.0.0.2"]));
    s.clock.advance(60_000);
    assert.deepEqual(s.batches, []);
    s.put(
      dns("dns-a", "dns", [], {
        endpoints: [
          { addresses: ["10.0.0.1"], serving: false, terminating: true },
          { addresses: ["10.0.0.2"], ready: true },
        ],
      }),
    );
    s.clock.advance(1000);
    assert.deepEqual(s.batches, [[A]]);
  });

  test("a slice that lists nothing acted on is not kept, unless parts of it were skipped", () => {
    const s = scene();
    const tcp = (name: string, ports: SliceSpec["ports"]) =>
      endpointSlice({ name, service: "web", ports, endpoints: [{ addresses: ["10.0.0.1"] }] });
    s.put(tcp("web-a", [{ name: "http", port: 80, protocol: "TCP" }]));
    s.put(udpSlice("dns-a", "dns", 53, []));
    assert.equal(s.cache.sliceCount, 0);
    // A slice that listed a UDP backend and now lists only TCP ports: its backend is removed.
    s.put(udpSlice("mixed", "dns", 53, ["10.0.0.2"]));
    s.put(tcp("mixed", [{ name: "http", port: 80, protocol: "TCP" }]));
    s.clock.advance(1000);
    assert.deepEqual(s.batches, [["10.0.0.2:53/udp"]]);
    assert.equal(s.cache.sliceCount, 0);
    // Kept, so that what was skipped is logged once per version.
    s.put(tcp("bad", [{ name: "dns", port: 0, protocol: "UDP" }]));
    assert.deepEqual([...s.cache.sliceIds()], ["default/bad"]);
  });

  test("a backend's listings, one or several, ready or terminating, as they come and go", () => {
    const cache = new EndpointCache();
    const put = (s: V1EndpointSlice) => cache.put(content(s));
    const at = () => ({ status: cache.status(k(A)), services: cache.servicesOf(k(A)).sort() });
    put(dns("one-a", "one", ["10.0.0.1"]));
    assert.deepEqual(at(), { status: "ready", services: ["default/one"] });
    put(dns("two-a", "two", ["10.0.0.1~"]));
    assert.deepEqual(at(), { status: "ready", services: ["default/one", "default/two"] });
    put(dns("one-b", "one", ["10.0.0.1"]));
    cache.remove("default/one-a");
    assert.deepEqual(at(), { status: "ready", services: ["default/one", "default/two"] });
    cache.remove("default/one-b");
    assert.deepEqual(at(), { status: "fallback", services: ["default/two"] });
    put(dns("two-a", "two", ["10.0.0.1"]));
    assert.deepEqual(at(), { status: "ready", services: ["default/two"] });
    cache.remove("default/two-a");
    assert.deepEqual(at(), { status: "absent", services: [] });
    assert.equal(cache.backendCount, 0);
  });

  test("ownersOf: the Service and pod of each listing that is not ready", () => {
    const cache = new EndpointCache();
    cache.put(
      content(
        dns("dns-a", "dns", [], {
          endpoints: [
            { addresses: ["10.0.0.1"], ready: false, serving: true, terminating: true, pod: "old" },
            { addresses: ["10.0.0.2"], ready: true, pod: "ready" },
          ],
        }),
      ),
    );
    cache.put(content(dns("web-a", "web", [], { endpoints: [{ addresses: ["10.0.0.1"], ready: false }] })));
    assert.deepEqual(cache.ownersOf(k(A)), ["default/dns old", "default/web "]);
    assert.deepEqual(cache.ownersOf(parseKeyText("10.0.0.2:53/udp")!), []);
    cache.remove("default/dns-a");
    assert.deepEqual(cache.ownersOf(k(A)), ["default/web "]);
  });

  test("a burst of changes becomes one batch; steady churn still acts within twice the window", () => {
    const s = scene();
    const addresses = Array.from({ length: 50 }, (_, i) => `10.0.1.${i + 1}`);
    s.put(udpSlice("big", "dns", 53, addresses));
    for (let i = 0; i < 50; i++) {
      s.put(udpSlice("big", "dns", 53, addresses.slice(i + 1)));
      s.clock.advance(10);
    }
    s.clock.advance(1000);
    assert.equal(s.batches.length, 1);
    assert.equal(s.batches[0]!.length, 50);

    const churn = scene();
    churn.put(udpSlice("a", "dns", 53, ["10.0.0.1"]));
    churn.put(udpSlice("a", "dns", 53, []));
    // Another removal every 300 ms never lets a quiet window pass.
    for (let i = 0; i < 7; i++) {
      churn.put(udpSlice(`x${i}`, "dns", 53, [`10.0.2.${i}`]));
      churn.put(udpSlice(`x${i}`, "dns", 53, []));
      churn.clock.advance(300);
    }
    assert.ok(churn.batches.length >= 1, "the first removal did not wait for the churn to stop");
    assert.ok(churn.batches[0]!.includes("10.0.0.1:53/udp"));
    const first = churn.taken[0]!;
    assert.ok(
      first.every((r) => churn.clock.now() - r.since >= 1000),
      "a removal younger than the window was taken",
    );
  });

  test("restore: saved backends absent from the first list are due at once; present ones are armed", async () => {
    const s = scene();
    s.put(udpSlice("dns-a", "dns", 53, ["10.0.0.2"]));
    const saved = new Map(
      ["10.0.0.1:53/udp", "10.0.0.2:53/udp"].map((text) => [parseKeyText(text)!, ["default/dns"]]),
    );
    assert.equal(await s.tracker.restore(saved), 1);
    s.clock.advance(0);
    assert.deepEqual(s.batches, [["10.0.0.1:53/udp"]]);
    assert.equal(s.taken[0]![0]!.restored, true);
    assert.deepEqual(
      [...s.tracker.known()].flatMap((k) => k.keys.map(keyText)),
      ["10.0.0.2:53/udp"],
    );
  });

  test("restore looks at 4,096 saved backends a turn of the event loop at most", async () => {
    const s = scene();
    const saved = new Map<BackendKey, string[]>();
    for (let i = 0; i < 50_000; i++)
      saved.set(parseKeyText(`10.1.${i >> 8}.${i & 255}:53/udp`)!, ["default/dns"]);
    const loop = new TurnCounter();
    const lookedIn = new Map<number, number>();
    const counted = {
      *[Symbol.iterator]() {
        for (const entry of saved) {
          lookedIn.set(loop.turns, (lookedIn.get(loop.turns) ?? 0) + 1);
          yield entry;
        }
      },
    } as unknown as ReadonlyMap<BackendKey, string[]>;
    assert.equal(await s.tracker.restore(counted), 50_000);
    loop.stop();
    assert.ok(Math.max(...lookedIn.values()) <= 4096, `${Math.max(...lookedIn.values())} in one turn`);
    assert.equal(s.tracker.pendingCount, 50_000);
  });

  test("known() is a snapshot: changes to the cache after it leave it as it was", () => {
    const cache = new EndpointCache();
    const tracker = new RemovalTracker(cache, { policy: "terminate", coalesceMs: 100, onDue: () => {} });
    tracker.observe(cache.put(content(udpSlice("a", "dns", 53, ["10.0.0.1", "10.0.0.2"]))));
    tracker.observe(cache.put(content(udpSlice("b", "dns", 53, ["10.0.0.3"]))));
    const snapshot = tracker.known();
    const texts = () => snapshot.flatMap((g) => g.keys.map(keyText)).sort();
    // The endpoint moves from a to b, then a goes: a save still writing the snapshot finds it whole.
    tracker.observe(cache.put(content(udpSlice("b", "dns", 53, ["10.0.0.3", "10.0.0.2"]))));
    tracker.observe(cache.put(content(udpSlice("a", "dns", 53, ["10.0.0.1"]))));
    tracker.observe(cache.remove("default/a"));
    assert.deepEqual(texts(), ["10.0.0.1:53/udp", "10.0.0.2:53/udp", "10.0.0.3:53/udp"]);
    assert.deepEqual(
      tracker
        .known()
        .flatMap((g) => g.keys.map(keyText))
        .sort(),
      ["10.0.0.1:53/udp", "10.0.0.2:53/udp", "10.0.0.3:53/udp"],
      "10.0.0.1 is pending: still known",
    );
  });

  test("known() keeps pending and in-flight removals until they are settled", () => {
    const clock = new ManualClock();
    const cache = new EndpointCache();
    const tracker = new RemovalTracker(cache, {
      policy: "terminate",
      coalesceMs: 100,
      clock,
      onDue: () => {},
    });
    tracker.observe(cache.put(content(udpSlice("a", "dns", 53, ["10.0.0.1", "10.0.0.2"]))));
    tracker.observe(cache.put(content(udpSlice("a", "dns", 53, ["10.0.0.2"]))));
    const known = () => [...tracker.known()].flatMap((g) => g.keys.map(keyText)).sort();
    assert.deepEqual(known(), ["10.0.0.1:53/udp", "10.0.0.2:53/udp"]);
    clock.advance(100);
    const due = tracker.take();
    assert.equal(due.length, 1);
    assert.deepEqual(known(), ["10.0.0.1:53/udp", "10.0.0.2:53/udp"]);
    tracker.settled(due);
    assert.deepEqual(known(), ["10.0.0.2:53/udp"]);
  });
});
