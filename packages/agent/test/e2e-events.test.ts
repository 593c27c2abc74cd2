/**
 * Events end to end, with the real kernel and the real terminator: a rollout removes a backend
 * whose clients are held by processes in pod cgroups — in pod namespaces and in the host's
 * (host-network pods) — beside bystander pods, one of them host-network too. The scene's backends
 * listen on a port of this process's own, so that agents tested at the same time elsewhere (they
 * visit the host's namespace too) never act on these clients.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { after, afterEach, before, test } from "node:test";
import type { HeldSocket } from "sockdiag-test-kit";
import {
  BackendScene,
  describeAsRoot,
  Holder,
  metric,
  type PodCgroup,
  podCgroupV2,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  type TestAgentOptions,
  udpSlice,
  until,
} from "./kit/index.js";

const NODE = "node-e2e";
const WAIT_MS = 15_000;
const [A, B] = ["127.13.0.1", "127.13.0.2"] as [string, string];
const VIP = "127.13.1.1";
const PORT = 20_000 + (process.pid % 20_000);

interface ScenePod {
  name: string;
  uid: string;
  holder: Holder;
}

describeAsRoot("Events on the pods whose sockets were destroyed (end to end)", () => {
  let api: StandInApiServer;
  let scene: BackendScene;
  const hostHolders: Holder[] = [];
  const cgroups: PodCgroup[] = [];
  const cleanups: (() => Promise<void>)[] = [];
  /** Pods in the scene's namespaces 0 and 1 (clients), 2 (bystander); in the host's: a client, a bystander. */
  const pods: Record<"client0" | "client1" | "bystander" | "hostClient" | "hostBystander", ScenePod> =
    {} as never;
  let services = 0;

  before(async () => {
    api = await StandInApiServer.start();
    scene = await BackendScene.start("events", 3, [A, B], PORT);
    const place = async (name: string, holder: Holder): Promise<ScenePod> => {
      const uid = randomUUID();
      const cgroup = podCgroupV2(uid);
      if (!cgroup?.make()) assert.fail("a writable cgroup v2 hierarchy (mounted at its root) is needed");
      cgroups.push(cgroup);
      cgroup.enter(holder.pid);
      api.applyPod({ metadata: { namespace: "apps", name, uid }, spec: { nodeName: NODE, containers: [] } });
      return { name, uid, holder };
    };
    const host = async () => {
      const holder = await Holder.start();
      hostHolders.push(holder);
      return holder;
    };
    pods.client0 = await place("client-0", scene.nodes[0]!.holder);
    pods.client1 = await place("client-1", scene.nodes[1]!.holder);
    pods.bystander = await place("bystander", scene.nodes[2]!.holder);
    pods.hostClient = await place("host-client", await host());
    pods.hostBystander = await place("host-bystander", await host());
    // A pod of another node, of the same UID form: never named.
    api.applyPod({
      metadata: { namespace: "apps", name: "elsewhere", uid: randomUUID() },
      spec: { nodeName: "node-other", containers: [] },
    });
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    api.resetFaults();
  });
  after(async () => {
    // Every part is torn down even where one fails (a holder left running keeps this file's
    // process alive); the first failure is the hook's.
    const parts = [
      ...cgroups.map((cgroup) => async () => cgroup.remove()),
      ...hostHolders.map((holder) => () => holder.stop()),
      async () => scene?.stop(),
      async () => api?.close(),
    ];
    const failed = (await Promise.allSettled(parts.map((part) => part()))).find(
      (r) => r.status === "rejected",
    );
    if (failed) throw failed.reason;
  });

  async function agent(options: Partial<TestAgentOptions> = {}): Promise<TestAgent> {
    const dir = await scratchDir("e2e-events");
    cleanups.push(dir.remove);
    const t = await startTestAgent(api, {
      stateDir: dir.path,
      netnsDirs: [scene.dir],
      coalesceMs: 100,
      nodeName: NODE,
      ...options,
    });
    cleanups.push(() => t.stop());
    if (options.events !== false)
      await until(
        () =>
          t.logs.some((l) => l.msg === "agent started") &&
          api.requests.some((r) => r.resource === "pods" && r.kind === "watch"),
        WAIT_MS,
        "the Pod watch",
      );
    return t;
  }

  /** A Service of its own listing `addresses`; `set` changes them. */
  function service(addresses: string[]): { name: string; set(addresses: string[]): void } {
    const name = `events${++services}`;
    const set = (list: string[]) => api.apply(udpSlice(`${name}-0`, name, PORT, list));
    set(addresses);
    cleanups.push(async () => {
      api.remove("default", `${name}-0`);
    });
    return { name, set };
  }

  async function clients(pod: ScenePod, address: string, count: number): Promise<HeldSocket[]> {
    const sockets = await pod.holder.open({ kind: "udp", connect: { address, port: PORT } }, count);
    cleanups.push(() => pod.holder.close(sockets));
    return sockets;
  }

  const eventsOf = (pod: ScenePod) =>
    [...api.events.values()].filter((e) => (e.regarding as { uid?: string } | undefined)?.uid === pod.uid);

  async function batches(t: TestAgent, count: number): Promise<void> {
    await until(
      async () => (await metric(t.url, "sockdiag_agent_batches_total")) >= count,
      WAIT_MS,
      `${count} batch(es)`,
    );
  }

  test("a rollout: each client pod gets one Event with its counts; bystanders, host-network ones included, none", async () => {
    const svc = service([A, B]);
    const t = await agent();
    const ofA = [
      await clients(pods.client0, A, 2),
      await clients(pods.client1, A, 1),
      await clients(pods.hostClient, A, 3),
    ];
    const ofB = [
      await clients(pods.bystander, B, 2),
      await clients(pods.hostBystander, B, 2),
      await clients(pods.client0, B, 1),
    ];
    svc.set([B]);
    await Promise.all(
      [pods.client0, pods.client1, pods.hostClient].map((p, i) =>
        p.holder.waitFor(ofA[i]!, "ECONNABORTED", WAIT_MS),
      ),
    );
    await batches(t, 1);
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_pod_events_total{outcome="posted"}')) >= 3,
      WAIT_MS,
      "3 Events",
    );
    for (const [pod, count] of [
      [pods.client0, 2],
      [pods.client1, 1],
      [pods.hostClient, 3],
    ] as const) {
      const events = eventsOf(pod);
      assert.equal(events.length, 1, `${pod.name}: one Event`);
      const e = events[0]!;
      assert.deepEqual(e.regarding, {
        apiVersion: "v1",
        kind: "Pod",
        namespace: "apps",
        name: pod.name,
        uid: pod.uid,
      });
      assert.equal((e.metadata as { namespace: string }).namespace, "apps");
      assert.equal(e.reason, "UDPConnectionsTerminated");
      assert.equal(e.action, "Terminate");
      assert.equal(e.reportingInstance, NODE);
      assert.equal(e.series, undefined);
      const note = e.note as string;
      assert.ok(note.startsWith(`Destroyed ${count} socket`), note);
      assert.ok(
        note.includes(
          `${A}:${PORT}/udp (${count} socket${count === 1 ? "" : "s"}; Service default/${svc.name})`,
        ),
        note,
      );
      assert.ok(!note.includes(B), note);
    }
    for (const bystander of [pods.bystander, pods.hostBystander])
      assert.deepEqual(eventsOf(bystander), [], bystander.name);
    assert.equal(api.events.size, 3);
    // The bystanders' clients, and client-0's of B, were left alone.
    for (const [pod, sockets] of [
      [pods.bystander, ofB[0]!],
      [pods.hostBystander, ofB[1]!],
      [pods.client0, ofB[2]!],
    ] as const)
      assert.deepEqual(
        await pod.holder.poll(sockets),
        sockets.map(() => 11),
        pod.name,
      );
    // The batch's log names each client pod namespace/name beside its UID.
    const named = t.logs.filter((l) => l.msg === "pod sockets destroyed");
    assert.deepEqual(
      named.map((l) => `${l.pod} ${l.uid} ${l.sockets}`).sort(),
      [
        `apps/client-0 ${pods.client0.uid} 2`,
        `apps/client-1 ${pods.client1.uid} 1`,
        `apps/host-client ${pods.hostClient.uid} 3`,
      ].sort(),
    );
  });

  test("the same pod again within 10 minutes: the Event's series is updated, no new Event", async () => {
    api.events.clear();
    const svc = service([A, B]);
    const t = await agent();
    const first = await clients(pods.client1, A, 1);
    svc.set([B]);
    await pods.client1.holder.waitFor(first, "ECONNABORTED", WAIT_MS);
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_pod_events_total{outcome="posted"}')) >= 1,
      WAIT_MS,
      "an Event",
    );
    svc.set([A, B]);
    const second = await clients(pods.client1, A, 2);
    svc.set([B]);
    await pods.client1.holder.waitFor(second, "ECONNABORTED", WAIT_MS);
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_pod_events_total{outcome="updated"}')) >= 1,
      WAIT_MS,
      "an update",
    );
    const events = eventsOf(pods.client1);
    assert.equal(events.length, 1);
    assert.equal((events[0]!.series as { count: number }).count, 2);
    assert.ok(api.eventCalls.some((c) => c.method === "PATCH" && c.namespace === "apps"));
  });

  test("a conntrack entry is the pod's whose IP is its original source: that pod's Event counts it", async () => {
    api.events.clear();
    const node = scene.nodes[1]!;
    const podIp = "127.14.1.1";
    api.applyPod({
      metadata: { namespace: "apps", name: pods.client1.name, uid: pods.client1.uid },
      spec: { nodeName: NODE, containers: [] },
      status: { podIP: podIp, podIPs: [{ ip: podIp }] },
    });
    const svc = service([A, B]);
    const t = await agent();
    // kube-proxy's DNAT in the pod's namespace: the client reaches A through a virtual IP, from the pod's IP.
    await scene.dnat(node, VIP, A);
    const [client] = await node.holder.open({
      kind: "udp",
      bind: { address: podIp, port: 0 },
      connect: { address: VIP, port: PORT },
    });
    cleanups.push(() => node.holder.close([client!]));
    assert.deepEqual(await node.holder.send([client!]), [0]);
    assert.deepEqual(await scene.received(node), [A]);
    svc.set([B]);
    const count = (outcome: string) => metric(t.url, `sockdiag_agent_pod_events_total{outcome="${outcome}"}`);
    await until(async () => (await count("posted")) >= 1, WAIT_MS, "an Event");
    const events = eventsOf(pods.client1);
    assert.equal(events.length, 1);
    const note = events[0]!.note as string;
    assert.ok(note.startsWith("Deleted 1 conntrack entry of connections"), note);
    assert.ok(note.includes(`${A}:${PORT}/udp (1 conntrack entry; Service default/${svc.name})`), note);
    assert.equal(api.events.size, 1, "no other pod's");
  });

  test("a refused Event changes nothing in the termination: clients aborted, counts the same, the refusal counted", async () => {
    api.failEvents({
      code: 403,
      message: 'events.events.k8s.io is forbidden: User "system:serviceaccount:x:y" cannot create',
    });
    const svc = service([A, B]);
    const t = await agent();
    const sockets = await clients(pods.client0, A, 2);
    svc.set([B]);
    await pods.client0.holder.waitFor(sockets, "ECONNABORTED", WAIT_MS);
    await batches(t, 1);
    assert.equal(await metric(t.url, 'sockdiag_agent_sockets_total{outcome="destroyed"}'), 2);
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_pod_events_total{outcome="failed"}')) >= 1,
      WAIT_MS,
      "a failed Event",
    );
    assert.ok(t.logs.some((l) => l.msg === "pod event not posted"));
    assert.equal(t.agent.live(), true);
    assert.equal(t.agent.ready(), true);
  });

  test("--no-events: no Pod watch, no Event; the termination as ever", async () => {
    const before = api.eventCalls.length;
    const podRequests = api.requests.filter((r) => r.resource === "pods").length;
    const svc = service([A, B]);
    const t = await agent({ events: false });
    const sockets = await clients(pods.client0, A, 2);
    svc.set([B]);
    await pods.client0.holder.waitFor(sockets, "ECONNABORTED", WAIT_MS);
    await batches(t, 1);
    assert.equal(api.eventCalls.length, before);
    assert.equal(api.requests.filter((r) => r.resource === "pods").length, podRequests);
    assert.equal(t.logs.filter((l) => l.msg === "pod sockets destroyed").length, 0);
  });
});
