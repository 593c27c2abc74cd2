/**
 * The Pod watch and the Event requests against the stand-in API server: the node's Pods by field
 * selector, through the reflector into PodStore; Events created and their series patched, as
 * events.k8s.io/v1 validates them, refused and failed.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { KubeConfig, type V1Pod } from "@kubernetes/client-node";
import { backendText } from "../src/backend.js";
import { ExponentialBackoff } from "../src/backoff.js";
import { EventApi } from "../src/event-api.js";
import { type EventObject, microTime } from "../src/events.js";
import { ApiStatusError, EndpointSliceApi, PODS_PATH } from "../src/kube-api.js";
import { PodStore } from "../src/pods.js";
import { Reflector } from "../src/reflector.js";
import { RequestAuth } from "../src/request-auth.js";
import { emptyOutcome } from "../src/terminator.js";
import { StandInApiServer } from "./kit/api-server.js";
import {
  ManualClock,
  metric,
  RecordingTerminator,
  scratchDir,
  startTestAgent,
  udpSlice,
  until,
} from "./kit/index.js";

let api: StandInApiServer;
let kubeConfig: KubeConfig;
let auth: RequestAuth;
let removeDir: () => Promise<void>;
before(async () => {
  api = await StandInApiServer.start();
  const dir = await scratchDir("pod-watch");
  removeDir = dir.remove;
  kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(await api.writeKubeconfig(join(dir.path, "kubeconfig.json")));
  auth = new RequestAuth(kubeConfig);
});
after(async () => {
  await auth.close();
  await api.close();
  await removeDir();
});

const uid = (i: number) => `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
const pod = (i: number, node: string, namespace = "apps"): V1Pod => ({
  metadata: { namespace, name: `pod-${i}`, uid: uid(i) },
  spec: { nodeName: node, containers: [{ name: "c" }] },
});

function event(name: string, namespace = "apps"): EventObject {
  return {
    apiVersion: "events.k8s.io/v1",
    kind: "Event",
    metadata: { name, namespace },
    eventTime: microTime(Date.now()),
    reportingController: "sockdiag.io/agent",
    reportingInstance: "node-a",
    action: "Terminate",
    reason: "UDPConnectionsTerminated",
    regarding: { apiVersion: "v1", kind: "Pod", namespace, name: "pod-1", uid: uid(1) },
    note: "Destroyed 1 socket",
    type: "Normal",
  };
}

const noop = {
  watchOpened() {},
  failed() {},
  streamingRefused() {},
};

describe("the Pod watch", () => {
  test("lists and watches this node's Pods only (fieldSelector), through 410 and re-lists", async () => {
    api.applyPod(pod(1, "node-a"));
    api.applyPod(pod(2, "node-b"));
    api.applyPod(pod(3, "node-a", "other"));
    const store = new PodStore("node-a");
    const reflector = new Reflector(
      new EndpointSliceApi(kubeConfig, { maxObjectBytes: 1 << 20, maxListBytes: 1 << 24 }, auth, {
        path: PODS_PATH,
        fieldSelector: "spec.nodeName=node-a",
      }),
      store,
      noop,
      new ExponentialBackoff({ initialMs: 10, maxMs: 50 }),
    );
    reflector.start();
    try {
      await until(() => store.size === 2, 5000, "the first list");
      assert.deepEqual(store.pod(uid(1)), { uid: uid(1), namespace: "apps", name: "pod-1" });
      assert.deepEqual(store.pod(uid(3)), { uid: uid(3), namespace: "other", name: "pod-3" });
      assert.equal(store.pod(uid(2)), undefined);
      const asked = api.requests.filter((r) => r.resource === "pods");
      assert.ok(asked.length > 0);
      for (const r of asked) assert.equal(r.fieldSelector, "spec.nodeName=node-a");
      api.applyPod(pod(4, "node-a"));
      api.applyPod(pod(5, "node-b"));
      await until(() => store.pod(uid(4)) !== undefined, 5000, "pod 4 by watch");
      api.removePod("apps", "pod-1");
      await until(() => store.pod(uid(1)) === undefined, 5000, "pod 1 deleted by watch");
      assert.equal(store.pod(uid(5)), undefined);
      // A 410 on the open watch: listed again; a pod added meanwhile comes in the list.
      api.compact();
      api.applyPod(pod(6, "node-a"));
      api.expireWatches();
      await until(() => store.pod(uid(6)) !== undefined, 5000, "pod 6 after the re-list");
      assert.equal(store.size, 3);
    } finally {
      await reflector.stop();
    }
  });

  test("a field selector other than spec.nodeName of pods is refused with 400, as an unknown field label", async () => {
    const store = new PodStore("node-a");
    const failures: unknown[] = [];
    const reflector = new Reflector(
      new EndpointSliceApi(kubeConfig, { maxObjectBytes: 1 << 20, maxListBytes: 1 << 24 }, auth, {
        path: PODS_PATH,
        fieldSelector: "status.phase=Running",
      }),
      store,
      { ...noop, failed: (err) => failures.push(err) },
      new ExponentialBackoff({ initialMs: 10, maxMs: 50 }),
    );
    reflector.start();
    try {
      await until(() => failures.length > 0, 5000, "a failed list");
      assert.ok(failures[0] instanceof ApiStatusError);
      assert.equal((failures[0] as ApiStatusError).code, 400);
    } finally {
      await reflector.stop();
    }
  });

  test("PodStore keeps UID, namespace and name of this node's well-formed Pods only", () => {
    const store = new PodStore("node-a");
    const ok = {
      metadata: { uid: uid(1), namespace: "apps", name: "pod-1", labels: { a: "b" } },
      spec: { nodeName: "node-a" },
    };
    const bad: unknown[] = [
      null,
      "pod",
      { metadata: { uid: uid(2), namespace: "apps", name: "pod-2" }, spec: { nodeName: "node-b" } },
      { metadata: { uid: "not-a-uid", namespace: "apps", name: "pod-3" }, spec: { nodeName: "node-a" } },
      { metadata: { uid: uid(4), namespace: "Apps!", name: "pod-4" }, spec: { nodeName: "node-a" } },
      { metadata: { uid: uid(5), namespace: "apps", name: 5 }, spec: { nodeName: "node-a" } },
      { metadata: { uid: uid(6), namespace: "apps", name: "x".repeat(300) }, spec: { nodeName: "node-a" } },
    ];
    const replacement = store.replacement();
    for (const raw of [ok, ...bad]) replacement.add(raw);
    return replacement.commit(bad.length + 1).then(() => {
      assert.equal(store.size, 1);
      assert.deepEqual(store.pod(uid(1)), { uid: uid(1), namespace: "apps", name: "pod-1" });
      store.delete({ metadata: { uid: uid(1) } });
      assert.equal(store.size, 0);
    });
  });

  test("PodStore's pod IPs: canonical, a pod's own (not a host-network pod's), moved and forgotten with the pod", () => {
    const store = new PodStore("node-a");
    const podWith = (i: number, status: unknown, hostNetwork = false) => ({
      metadata: { uid: uid(i), namespace: "apps", name: `pod-${i}` },
      spec: { nodeName: "node-a", hostNetwork },
      status,
    });
    store.put(podWith(1, { podIP: "10.1.0.1", podIPs: [{ ip: "10.1.0.1" }, { ip: "fd00:0::1" }] }));
    store.put(podWith(2, { podIP: "10.1.0.2" }));
    store.put(podWith(3, { podIP: "192.168.0.10", podIPs: [{ ip: "192.168.0.10" }] }, true));
    store.put(podWith(4, { podIPs: [{ ip: "not an ip" }, { ip: 7 }, null] }));
    assert.equal(store.podOfIp("10.1.0.1")?.name, "pod-1");
    assert.equal(store.podOfIp("fd00::1")?.name, "pod-1");
    assert.equal(store.podOfIp("10.1.0.2")?.name, "pod-2");
    assert.equal(store.podOfIp("192.168.0.10"), undefined, "a host-network pod's IP is the node's");
    assert.equal(store.size, 4);
    // Pod 2's IP goes to pod 5 (pod 2 gone): the IP is pod 5's alone.
    store.delete({ metadata: { uid: uid(2) } });
    store.put(podWith(5, { podIP: "10.1.0.2" }));
    assert.equal(store.podOfIp("10.1.0.2")?.name, "pod-5");
    store.put(podWith(1, { podIP: "10.1.0.9" }));
    assert.equal(store.podOfIp("10.1.0.1"), undefined);
    assert.equal(store.podOfIp("10.1.0.9")?.name, "pod-1");
  });
});

describe("Event requests", () => {
  test("an Event is created; its series is patched; the stored Event has both", async () => {
    const events = new EventApi(kubeConfig, auth);
    const signal = new AbortController().signal;
    await events.create(event("pod-1.1"), signal);
    const series = { count: 2, lastObservedTime: microTime(Date.now()) };
    await events.patch("apps", "pod-1.1", { series }, signal);
    const stored = api.events.get("apps/pod-1.1");
    assert.equal(stored?.reason, "UDPConnectionsTerminated");
    assert.deepEqual(stored?.series, series);
    const patch = api.eventCalls.find((c) => c.method === "PATCH");
    assert.equal(patch?.contentType, "application/strategic-merge-patch+json");
  });

  test("the API's validation: each required field missing, a long note, a series of 1, a name taken, a patch of none", async () => {
    const events = new EventApi(kubeConfig, auth);
    const signal = new AbortController().signal;
    const refused = async (promise: Promise<void>, code: number, field: string) => {
      await assert.rejects(promise, (err: unknown) => {
        assert.ok(err instanceof ApiStatusError, String(err));
        assert.equal(err.code, code);
        assert.match(err.message, new RegExp(field.replaceAll(".", "\\.")));
        return true;
      });
    };
    for (const field of [
      "eventTime",
      "reportingController",
      "reportingInstance",
      "action",
      "reason",
    ] as const) {
      const e = event(`missing-${field.toLowerCase()}`) as unknown as Record<string, unknown>;
      delete e[field];
      await refused(events.create(e as unknown as EventObject, signal), 422, field);
    }
    await refused(events.create({ ...event("long-note"), note: "x".repeat(1025) }, signal), 422, "note");
    await refused(events.create({ ...event("bad-type"), type: "Odd" as "Normal" }, signal), 422, "type");
    await refused(
      events.create(
        { ...event("series-1"), series: { count: 1, lastObservedTime: microTime(Date.now()) } },
        signal,
      ),
      422,
      "series.count",
    );
    await events.create(event("taken"), signal);
    await refused(events.create(event("taken"), signal), 409, "already exists");
    await refused(
      events.patch("apps", "none", { series: { count: 2, lastObservedTime: microTime(Date.now()) } }, signal),
      404,
      "not found",
    );
    await refused(
      events.patch(
        "apps",
        "taken",
        { series: { count: 1, lastObservedTime: microTime(Date.now()) } },
        signal,
      ),
      422,
      "series.count",
    );
    assert.equal(api.events.has("apps/missing-eventtime"), false);
  });

  test("refused (403) and failed (500) Events; a stalled one is given up by its signal", async () => {
    const events = new EventApi(kubeConfig, auth);
    api.failEvents({
      code: 403,
      times: 1,
      message: 'events.events.k8s.io is forbidden: User "agent" cannot create',
    });
    await assert.rejects(events.create(event("refused"), new AbortController().signal), { code: 403 });
    api.failEvents({ code: 500, times: 1 });
    await assert.rejects(events.create(event("failed"), new AbortController().signal), { code: 500 });
    api.stallEvents();
    const controller = new AbortController();
    const stalled = events.create(event("stalled"), controller.signal);
    await api.nextEventCall((c) => c.answer === "stalled");
    controller.abort();
    await assert.rejects(stalled);
    api.stallEvents(false);
    assert.equal(api.events.has("apps/refused"), false);
    assert.equal(api.events.has("apps/stalled"), false);
    await events.create(event("after"), new AbortController().signal);
    assert.equal(api.events.has("apps/after"), true);
  });
});

describe("an Event storm through the agent", () => {
  test("batches destroying sockets of 80 pods within a minute: 60 Events, 20 counted dropped", async () => {
    const node = "node-storm";
    const uids = Array.from({ length: 80 }, (_, i) => uid(1000 + i));
    for (const [i, u] of uids.entries())
      api.applyPod({
        metadata: { namespace: "storm", name: `p-${i}`, uid: u },
        spec: { nodeName: node, containers: [] },
      });
    const addresses = Array.from({ length: 4 }, (_, i) => `10.77.0.${i + 1}`);
    api.apply(udpSlice("storm-0", "storm", 53, addresses));
    // Each batch destroyed one socket of each of 20 pods: four batches, 80 pods.
    let batch = 0;
    const terminator = new RecordingTerminator((backends) => ({
      ...emptyOutcome(),
      pods: uids
        .slice(20 * batch, 20 * ++batch)
        .map((u) => ({ uid: u, backends: new Map([[backendText(backends[0]!), 1]]) })),
    }));
    const dir = await scratchDir("storm");
    const clock = new ManualClock();
    const t = await startTestAgent(api, { stateDir: dir.path, terminator, nodeName: node, clock });
    try {
      await until(
        () => api.requests.some((r) => r.resource === "pods" && r.kind === "watch" && r.node === node),
        10_000,
        "the Pod watch",
      );
      for (let i = 1; i <= 4; i++) {
        api.apply(udpSlice("storm-0", "storm", 53, addresses.slice(i)));
        await terminator.waitForBatches(i);
      }
      const count = (outcome: string) =>
        metric(t.url, `sockdiag_agent_pod_events_total{outcome="${outcome}"}`);
      await until(
        async () => (await count("posted")) + (await count("dropped")) === 80,
        10_000,
        "80 pods told",
      );
      assert.equal(await count("posted"), 60);
      assert.equal(await count("dropped"), 20);
      assert.equal([...api.events.keys()].filter((k) => k.startsWith("storm/")).length, 60);
    } finally {
      await t.stop();
      await dir.remove();
    }
  });
});
