/**
 * End to end with the real kernel: the agent (real client library, real terminator) watches the
 * stand-in API server while holders in throwaway namespaces keep UDP clients of several backends.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { join } from "node:path";
import { after, afterEach, before, test } from "node:test";
import {
  BackendScene,
  describeAsRoot,
  type EndpointSpec,
  endpointSlice,
  metric,
  podCgroupV2,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  type TestAgent,
  type TestAgentOptions,
  udpSlice,
  until,
} from "./kit/index.js";

const COALESCE_MS = 200;
/** How long a test waits for clients to be aborted before it fails: a bound on waiting, not a
 * promise of speed (the agent's latency is `npm run bench`'s figure). */
const ABORT_WAIT_MS = 15_000;
const [A, B, C, D] = ["127.13.0.1", "127.13.0.2", "127.13.0.3", "127.13.0.4"] as [
  string,
  string,
  string,
  string,
];

describeAsRoot("sockdiag-agent end to end", () => {
  let api: StandInApiServer;
  let scene: BackendScene;
  const cleanups: (() => Promise<void>)[] = [];
  let slices = 0;

  before(async () => {
    api = await StandInApiServer.start();
    scene = await BackendScene.start("e2e", 3, [A, B, C, D]);
  });
  // Backends are shared by the tests: each test's Services go away before the next one starts.
  const sliceNames = new Set<string>();
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
    for (const name of sliceNames) api.remove("default", name);
    sliceNames.clear();
    await scene.closeClients();
  });
  after(async () => {
    await scene?.stop();
    await api?.close();
  });

  /** A Service of its own for each test: slices "NAME-0", "NAME-1" listing `addresses`. */
  function service(...addressesPerSlice: string[][]): {
    name: string;
    set(i: number, addresses: string[]): void;
  } {
    const name = `e2e${++slices}`;
    const set = (i: number, addresses: string[]) => {
      sliceNames.add(`${name}-${i}`);
      api.apply(udpSlice(`${name}-${i}`, name, scene.port, addresses));
    };
    for (const [i, addresses] of addressesPerSlice.entries()) set(i, addresses);
    return { name, set };
  }

  /** Slice `name` of Service `service` on the scene's port, its endpoints as given. */
  function podSlice(name: string, service: string, endpoints: EndpointSpec[]): void {
    sliceNames.add(name);
    api.apply(
      endpointSlice({
        name,
        service,
        ports: [{ name: "dns", port: scene.port, protocol: "UDP" }],
        endpoints,
      }),
    );
  }
  const ready = (address: string, pod: string): EndpointSpec => ({
    addresses: [address],
    ready: true,
    serving: true,
    terminating: false,
    pod,
  });
  const terminating = (address: string, pod: string): EndpointSpec => ({
    addresses: [address],
    ready: false,
    serving: true,
    terminating: true,
    pod,
  });

  /** Clients see ECONNABORTED while the batch is still running: its counts come when it ends. */
  async function batchesDone(t: TestAgent, count: number): Promise<void> {
    await until(
      async () => (await metric(t.url, "sockdiag_agent_batches_total")) >= count,
      ABORT_WAIT_MS,
      `${count} batch(es)`,
    );
  }

  async function agent(options: Partial<TestAgentOptions> = {}, dir?: string): Promise<TestAgent> {
    let stateDir = dir;
    if (stateDir === undefined) {
      const d = await scratchDir("e2e");
      cleanups.push(d.remove);
      stateDir = d.path;
    }
    const t = await startTestAgent(api, {
      stateDir,
      netnsDirs: [scene.dir],
      coalesceMs: COALESCE_MS,
      ...options,
    });
    cleanups.push(t.stop);
    return t;
  }

  test("a backend removed from its slice: its clients get ECONNABORTED, the others are untouched, /metrics counts them", async () => {
    const svc = service([A, B, C]);
    const t = await agent();
    const [a, b, c] = [await scene.clients(A), await scene.clients(B), await scene.clients(C, 1)];
    svc.set(0, [B, C]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await scene.assertAlive(b, "clients of B");
    await scene.assertAlive(c, "clients of C");
    await batchesDone(t, 1);
    const destroyed = await metric(t.url, 'sockdiag_agent_sockets_total{outcome="destroyed"}');
    assert.equal(destroyed, BackendScene.count(a));
    assert.equal(await metric(t.url, "sockdiag_agent_removals_total"), 1);
    assert.equal(await metric(t.url, "sockdiag_agent_namespaces_visited_total"), 1 + scene.nodes.length);
    assert.equal(await metric(t.url, 'sockdiag_agent_sockets_total{outcome="failed"}'), 0);
    await t.stop();
  });

  test("an endpoint moved between two slices: nothing destroyed", async () => {
    const svc = service([A, B], [C]);
    const t = await agent();
    const [a, b, c] = [await scene.clients(A), await scene.clients(B), await scene.clients(C)];
    svc.set(0, [B]);
    svc.set(1, [C, A]);
    // B leaves for good right after: once its clients are aborted, the window for A has passed too.
    svc.set(1, [C]);
    svc.set(0, [A]);
    await scene.aborted(b, ABORT_WAIT_MS);
    await scene.assertAlive(a, "clients of A (moved)");
    await scene.assertAlive(c, "clients of C");
    await batchesDone(t, 1);
    assert.equal(
      await metric(t.url, 'sockdiag_agent_sockets_total{outcome="destroyed"}'),
      BackendScene.count(b),
    );
    await t.stop();
  });

  test("a terminating backend: clients aborted by default, kept with --on-terminating keep", async () => {
    const terminating = (name: string, address: string, others: string[]) =>
      endpointSlice({
        name,
        service: name.replace(/-\d+$/, ""),
        ports: [{ port: scene.port, protocol: "UDP" }],
        endpoints: [
          { addresses: [address], ready: false, serving: true, terminating: true },
          ...others.map((o) => ({ addresses: [o], ready: true })),
        ],
      });
    const svc = service([A, B]);
    const t = await agent();
    const a = await scene.clients(A);
    api.apply(terminating(`${svc.name}-0`, A, [B]));
    await scene.aborted(a, ABORT_WAIT_MS);
    await t.stop();

    const kept = service([C, D]);
    const k = await agent({ onTerminating: "keep" });
    const [c, d] = [await scene.clients(C), await scene.clients(D)];
    api.apply(terminating(`${kept.name}-0`, C, [D]));
    // D then goes away for good: when its clients are aborted, C's window has long passed.
    kept.set(0, [C]);
    api.apply(terminating(`${kept.name}-0`, C, []));
    await scene.aborted(d, ABORT_WAIT_MS);
    await scene.assertAlive(c, "clients of the terminating backend C (keep)");
    await k.stop();
  });

  test("removals during a partition with the history compacted (410) and during a dropped watch are all made", async () => {
    const svc = service([A, B, C]);
    const t = await agent();
    const [a, b, c] = [await scene.clients(A), await scene.clients(B), await scene.clients(C)];
    api.partition(true);
    svc.set(0, [B, C]);
    api.compact();
    api.partition(false);
    await scene.aborted(a, ABORT_WAIT_MS);
    api.dropConnections();
    svc.set(0, [C]);
    await scene.aborted(b, ABORT_WAIT_MS);
    await scene.assertAlive(c, "clients of C");
    await t.stop();
  });

  test("agent stopped, backend removed, agent started: its clients are aborted", async () => {
    const svc = service([A, B]);
    const dir = await scratchDir("restart");
    cleanups.push(dir.remove);
    const first = await agent({}, dir.path);
    await first.stop();
    const [a, b] = [await scene.clients(A), await scene.clients(B)];
    svc.set(0, [B]);
    const second = await agent({}, dir.path);
    await scene.aborted(a, ABORT_WAIT_MS);
    await scene.assertAlive(b, "clients of B");
    await batchesDone(second, 1);
    assert.equal(
      await metric(second.url, 'sockdiag_agent_sockets_total{outcome="destroyed"}'),
      BackendScene.count(a),
    );
    await second.stop();
  });

  test("a restart whose first list holds a malformed slice: nothing saved is terminated, and the watch runs", async () => {
    const svc = service([A, B]);
    const dir = await scratchDir("malformed");
    cleanups.push(dir.remove);
    const first = await agent({}, dir.path);
    await first.stop();
    const [a, b] = [await scene.clients(A), await scene.clients(B)];
    const bad = udpSlice(`${svc.name}-bad`, svc.name, scene.port, [C]) as unknown as Record<string, unknown>;
    delete bad.metadata;
    sliceNames.add(`${svc.name}-bad`);
    api.applyRaw("default", `${svc.name}-bad`, bad);
    const second = await agent({}, dir.path);
    const synced = second.logs.find((l) => l.msg === "endpointslices synced")!;
    assert.equal(synced.removedWhileAway, 0);
    assert.equal((await fetch(`${second.url}/readyz`)).status, 200);
    svc.set(0, [B]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await scene.assertAlive(b, "clients of B");
    await batchesDone(second, 1);
    assert.equal(await metric(second.url, "sockdiag_agent_removals_total"), 1);
  });

  test("a port outside 1-65535 is skipped, not terminated: the agent keeps working", async () => {
    const svc = service([A, B]);
    const zero = `${svc.name}-zero`;
    sliceNames.add(zero);
    api.apply(udpSlice(zero, svc.name, 0, [C]));
    const t = await agent();
    const [a, c] = [await scene.clients(A), await scene.clients(C)];
    api.apply(udpSlice(zero, svc.name, 0, []));
    svc.set(0, [B]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    await scene.assertAlive(c, "clients of C");
    assert.equal((await fetch(`${t.url}/healthz`)).status, 200);
    assert.equal(await metric(t.url, 'sockdiag_agent_slice_parts_skipped_total{reason="port"}'), 2);
  });

  test("::ffff:a.b.c.d in an IPv6 slice is the IPv4 backend: it leaves only when no Service lists it", async () => {
    const v4 = service([A, B]);
    const v6 = `${v4.name}-v6`;
    const v6Slice = (addresses: string[]) =>
      endpointSlice({
        name: v6,
        service: `${v4.name}6`,
        addressType: "IPv6",
        ports: [{ name: "dns", port: scene.port, protocol: "UDP" }],
        endpoints: addresses.map((address) => ({ addresses: [address], ready: true })),
      });
    sliceNames.add(v6);
    api.apply(v6Slice([`::ffff:${A}`]));
    const t = await agent();
    const [a, b] = [await scene.clients(A), await scene.clients(B)];
    // The mapped form leaves its Service, and B leaves its own: one batch, B's clients only.
    api.apply(v6Slice([]));
    v4.set(0, [A]);
    await scene.aborted(b, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    await scene.assertAlive(a, "clients of A, still listed by the IPv4 Service");
    v4.set(0, []);
    await scene.aborted(a, ABORT_WAIT_MS);
  });

  test("a DNAT'd client (Service virtual IP): after the removal its next datagram reaches a live backend", async () => {
    const VIP = "127.13.200.1";
    const node = scene.nodes[0]!;
    const svc = service([A, B]);
    const t = await agent();
    await scene.dnat(node, VIP, A);
    const [client] = await node.holder.open({ kind: "udp", connect: { address: VIP, port: scene.port } });
    assert.deepEqual(await node.holder.send([client!]), [0]);
    assert.deepEqual(await scene.received(node), [A]);
    // kube-proxy now points the virtual IP at B; the tracked flow still goes to A.
    await scene.dnat(node, VIP, B);
    await node.holder.send([client!]);
    assert.deepEqual(await scene.received(node), [A], "the stale conntrack entry did not send to A");
    svc.set(0, [B]);
    await until(
      async () => (await metric(t.url, 'sockdiag_agent_conntrack_entries_total{outcome="deleted"}')) >= 1,
      ABORT_WAIT_MS,
      "the agent to delete A's conntrack entry",
    );
    assert.deepEqual(await node.holder.send([client!]), [0], "the client's own socket was destroyed");
    assert.deepEqual(await scene.received(node), [B]);
    await t.stop();
  });

  test("kube-proxy's semantics: a failed readiness probe is a removal; an endpoint with no conditions is live", async () => {
    const svc = service([A, B]);
    const name = `${svc.name}-0`;
    const slice = (conditionsOfA: Record<string, boolean>) =>
      endpointSlice({
        name,
        service: svc.name,
        ports: [{ name: "dns", port: scene.port, protocol: "UDP" }],
        endpoints: [{ addresses: [A], ...conditionsOfA }, { addresses: [B] }],
      });
    api.apply(slice({ ready: true, serving: true, terminating: false }));
    const t = await agent();
    const [a, b] = [await scene.clients(A), await scene.clients(B)];
    api.apply(slice({ ready: false, serving: false, terminating: false }));
    await scene.aborted(a, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    await scene.assertAlive(b, "clients of B, listed with no conditions");
    assert.equal(await metric(t.url, "sockdiag_agent_removals_total"), 1);
  });

  test("aftercare: a client that connects after the batch and its first late pass, and a DNAT flow made then, are terminated too", async () => {
    const VIP = "127.13.200.2";
    const node = scene.nodes[1]!;
    const svc = service([A, B]);
    const t = await agent({ aftercareMs: 30_000 });
    const first = await scene.clients(A);
    await scene.dnat(node, VIP, A);
    svc.set(0, [B]);
    await scene.aborted(first, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    // The dataplane is late: after the batch and the first late pass (1 s), a client reaches A
    // directly, another through the virtual IP that still points at A.
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_passes_total")) >= 1,
      ABORT_WAIT_MS,
      "the first aftercare pass",
    );
    const late = await scene.clients(A, 1);
    const [viaVip] = await node.holder.open({ kind: "udp", connect: { address: VIP, port: scene.port } });
    assert.deepEqual(await node.holder.send([viaVip!]), [0]);
    assert.deepEqual(await scene.received(node), [A]);
    await scene.aborted(late, ABORT_WAIT_MS);
    await until(
      async () =>
        (await metric(t.url, 'sockdiag_agent_late_conntrack_entries_total{outcome="deleted"}')) >= 1,
      ABORT_WAIT_MS,
      "aftercare to delete the late flow",
    );
    // The late clients may be caught by two passes (those opened before the next pass, the rest at
    // the one after): a pass counts when it ends, after its clients saw ECONNABORTED.
    await until(
      async () =>
        (await metric(t.url, 'sockdiag_agent_late_sockets_total{outcome="destroyed"}')) >=
        BackendScene.count(late),
      ABORT_WAIT_MS,
      "the late sockets counted",
    );
    assert.equal(
      await metric(t.url, "sockdiag_agent_batches_total"),
      1,
      "late finds are not removal batches",
    );
    await scene.dnat(node, VIP, B);
    await node.holder.send([viaVip!]);
    assert.deepEqual(await scene.received(node), [B], "the flow to A was deleted");
    const line = t.logs.find((l) => l.msg === "aftercare pass")!;
    assert.deepEqual(line.backends, [`${A}:${scene.port}/udp`]);
  });

  test("aftercare: a backend whose address is listed again keeps the clients that connect afterwards", async () => {
    const svc = service([A, B]);
    const t = await agent({ aftercareMs: 30_000 });
    const first = await scene.clients(A);
    svc.set(0, [B]);
    await scene.aborted(first, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    // A new pod gets A's address.
    svc.set(0, [A, B]);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_backends")) === 0,
      ABORT_WAIT_MS,
      "aftercare to end",
    );
    const passes = await metric(t.url, "sockdiag_agent_aftercare_passes_total");
    const next = await scene.clients(A);
    // Past the passes at 1 and 3 s that A would have had.
    await new Promise((resolve) => setTimeout(resolve, 3500));
    await scene.assertAlive(next, "clients of the new pod at A");
    assert.equal(
      await metric(t.url, "sockdiag_agent_aftercare_passes_total"),
      passes,
      "a pass after aftercare ended",
    );
  });

  test("the batch line names each namespace it destroyed sockets in, and the pod UID of its processes", async () => {
    const node = scene.nodes[2]!;
    const uid = randomUUID();
    const cgroup = podCgroupV2(uid);
    if (!cgroup?.make()) assert.fail("a writable cgroup v2 hierarchy (mounted at its root) is needed");
    cleanups.push(async () => cgroup.remove());
    cgroup.enter(node.holder.pid);
    const svc = service([A, B]);
    const t = await agent();
    const a = await scene.clients(A);
    svc.set(0, [B]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    const line = t.logs.find((l) => l.msg === "removal batch")!;
    const touched = line.touched as { netns: string; path?: string; pods: string[]; sockets: number }[];
    assert.deepEqual(
      touched.map((n) => n.netns).sort(),
      scene.nodes.map((n) => n.name).sort(),
      "every namespace holding A's clients, and no other",
    );
    const mine = touched.find((n) => n.netns === node.name)!;
    assert.deepEqual(mine.pods, [uid]);
    assert.equal(mine.path, join(scene.dir, node.name));
    assert.equal(mine.sockets, a.get(node)!.length);
    for (const other of touched.filter((n) => n !== mine)) assert.deepEqual(other.pods, []);
  });

  test("the only serving backend, terminating, keeps its clients through its grace period; a ready replacement takes them", async () => {
    const svc = service([A]);
    const witness = service([C, D]);
    const t = await agent({ aftercareMs: 30_000 });
    const a = await scene.clients(A);
    podSlice(`${svc.name}-0`, svc.name, [terminating(A, "pod-a")]);
    // A removal made after it, and two aftercare passes: A's change was looked at, and acted on or not.
    const c = await scene.clients(C);
    witness.set(0, [D]);
    await scene.aborted(c, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    const reconnected = await scene.clients(A, 1);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_passes_total")) >= 2,
      ABORT_WAIT_MS,
      "two aftercare passes",
    );
    await scene.assertAlive(a, "clients of A, terminating, the only serving backend");
    await scene.assertAlive(reconnected, "clients that reached A during its grace period");
    podSlice(`${svc.name}-1`, svc.name, [ready(B, "pod-b")]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await scene.aborted(reconnected, ABORT_WAIT_MS);
  });

  test("a backend acted on while terminating: its aftercare window starts again when it leaves its slice", async () => {
    const svc = service([A, B]);
    const t = await agent({ aftercareMs: 2000 });
    const a = await scene.clients(A);
    podSlice(`${svc.name}-0`, svc.name, [terminating(A, "pod-a"), ready(B, "pod-b")]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    // The window's passes at 1 and 2 s, each counted once it is over.
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_passes_total")) >= 2,
      ABORT_WAIT_MS,
      "the aftercare window's two passes",
    );
    assert.equal(await metric(t.url, "sockdiag_agent_aftercare_backends"), 0, "the window is over");
    // A client that reaches A directly while its pod is still terminating, past the window.
    const late = await scene.clients(A, 1);
    podSlice(`${svc.name}-0`, svc.name, [ready(B, "pod-b")]);
    await scene.aborted(late, ABORT_WAIT_MS);
  });

  test("aftercare: an address taken by another pod, listed not ready under another Service, keeps its new clients", async () => {
    const svc = service([A, B, C]);
    const t = await agent({ aftercareMs: 30_000 });
    const [a, c] = [await scene.clients(A), await scene.clients(C)];
    svc.set(0, [B]);
    await scene.aborted(a, ABORT_WAIT_MS);
    await scene.aborted(c, ABORT_WAIT_MS);
    await batchesDone(t, 1);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_backends")) === 2,
      ABORT_WAIT_MS,
      "A and C in aftercare",
    );
    // A new pod of another Service gets A's address, not ready yet; C stays in aftercare.
    podSlice(`${svc.name}-other`, `${svc.name}-other`, [
      { addresses: [A], ready: false, serving: false, terminating: false, pod: "new-pod" },
    ]);
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_backends")) === 1,
      ABORT_WAIT_MS,
      "A's aftercare to end",
    );
    const direct = await scene.clients(A);
    // C's passes at 1 and 3 s: A's would have come with them.
    await until(
      async () => (await metric(t.url, "sockdiag_agent_aftercare_passes_total")) >= 2,
      ABORT_WAIT_MS,
      "two aftercare passes",
    );
    await scene.assertAlive(direct, "direct clients of the new pod at A");
    assert.equal(await metric(t.url, 'sockdiag_agent_late_sockets_total{outcome="destroyed"}'), 0);
  });
});
