/**
 * `terminate-backend --dry-run`'s plan by owner: over a procfs of the test's own (pods, a process
 * outside any pod, a socket nobody holds, a socket two processes hold), and as root in a namespace
 * the test makes, where holder processes sit in cgroups laid out as the kubelet lays them out —
 * two pods and a process outside any pod sharing one namespace, as host-network pods share the
 * host's — with a bystander pod connected elsewhere, which the plan must not name.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { PlanCollector } from "../../src/cli/commands/terminate-plan.js";
import { InetSocket } from "../../src/diag/socket.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  hierarchy,
  lacking,
  PodCgroup,
  type ScratchNetns,
} from "../kit/index.js";
import { sockdiag, sockdiagJson } from "./cli.js";

const CID = "4f6c2a9e0b1d3c5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";
const POD = "1234abcd-5678-4def-9abc-0123456789ab";
const EAGAIN = 11;

const socket = (inode: number, sport: number) =>
  InetSocket.build({
    family: "inet",
    protocol: "udp",
    state: "established",
    src: "10.0.0.1",
    sport,
    dst: "10.0.0.9",
    dport: 53,
    cookie: BigInt(inode),
    inode,
  });

describe("the plan over a procfs of the test's own", () => {
  let proc: string;
  before(() => {
    proc = mkdtempSync(join(tmpdir(), "sdt-plan-"));
    const processOf = (pid: number, command: string, cgroup: string, inodes: number[]) => {
      mkdirSync(join(proc, String(pid), "fd"), { recursive: true });
      writeFileSync(join(proc, String(pid), "comm"), `${command}\n`);
      writeFileSync(join(proc, String(pid), "cgroup"), `${cgroup}\n`);
      inodes.forEach((inode, fd) => {
        symlinkSync(`socket:[${inode}]`, join(proc, String(pid), "fd", String(fd + 3)));
      });
    };
    const systemd = `0::/kubepods.slice/kubepods-pod${POD.replaceAll("-", "_")}.slice/cri-containerd-${CID}.scope`;
    processOf(100, "client", systemd, [1001, 1004]);
    processOf(101, "client-child", systemd, [1004]);
    processOf(200, "dig", "0::/user.slice/session-1.scope", [1002]);
    processOf(300, "other", systemd, [1005]); // holds a socket the run did not approve
  });
  after(() => rmSync(proc, { recursive: true, force: true }));

  test("grouped by namespace, then pod and container, processes outside a pod, and sockets no one holds", () => {
    const plan = new PlanCollector();
    plan.approve(socket(1001, 40001));
    plan.approve(socket(1002, 40002));
    plan.endNamespace("pod-ns");
    plan.endNamespace("empty-ns");
    plan.approve(socket(1003, 40003));
    plan.approve(socket(1004, 40004));
    plan.endNamespace("(host)");
    const groups = plan
      .groups(proc)
      .map(({ sockets, ...g }) => ({ ...g, inodes: sockets.map((s) => s.inode) }));
    assert.deepEqual(groups, [
      {
        netns: "pod-ns",
        owner: "pod",
        pod: { uid: POD, container: CID },
        processes: [{ pid: 100, command: "client" }],
        wouldDestroy: 1,
        inodes: [1001],
      },
      {
        netns: "pod-ns",
        owner: "process",
        processes: [{ pid: 200, command: "dig" }],
        wouldDestroy: 1,
        inodes: [1002],
      },
      {
        netns: "(host)",
        owner: "pod",
        pod: { uid: POD, container: CID },
        processes: [
          { pid: 100, command: "client" },
          { pid: 101, command: "client-child" },
        ],
        wouldDestroy: 1,
        inodes: [1004],
      },
      { netns: "(host)", owner: "none", processes: [], wouldDestroy: 1, inodes: [1003] },
    ]);
  });
});

interface JsonPlanGroup {
  netns: string;
  owner: string;
  pod?: { uid: string; container?: string };
  processes: { pid: number; command: string }[];
  wouldDestroy: number;
  sockets: { inode: number; dport: number }[];
}

describeAsRoot("terminate-backend --dry-run by owner, against the kernel", () => {
  let ns: ScratchNetns;
  const holders: Holder[] = [];
  const cgroups: PodCgroup[] = [];
  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("plan");
  });
  after(async () => {
    for (const c of cgroups.splice(0).reverse()) c.remove();
    await Promise.all(holders.splice(0).map((h) => h.stop()));
    await ns?.remove();
  });

  async function holder(cgroup?: PodCgroup): Promise<Holder> {
    const h = await Holder.start({ netnsPath: ns.path });
    holders.push(h);
    cgroup?.enter(h.pid);
    return h;
  }

  const connected = (h: Holder, port: number, count = 1) =>
    h.open({ kind: "udp", family: "inet", connect: { address: "127.0.0.1", port } }, count);

  /** A holder's command as the kernel names it: "node", or the main thread's name where Node sets one. */
  const commOf = (pid: number) =>
    readFileSync(`/proc/${pid}/comm`, "utf8")
      .trimEnd()
      .replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

  /** The UDP sockets of the namespace connected to `port`, by inode, as `ls` lists them. */
  const listed = async (port: number) =>
    (await sockdiagJson(["ls", "-u", "-N", ns.name]))
      .filter((s) => (s as { dport?: number }).dport === port)
      .map((s) => (s as { inode: number }).inode)
      .sort((a, b) => a - b);

  test("pods sharing a namespace are told apart by their processes' cgroups; nothing is destroyed", async (t) => {
    const v2 = hierarchy("cgroup2");
    if (!v2) return lacking(t, "no cgroup2 hierarchy mounted at its root");
    const [uidA, uidB, uidBystander] = [randomUUID(), randomUUID(), randomUUID()];
    const cidA = CID;
    const cidB = CID.split("").reverse().join("");
    const podA = new PodCgroup(
      v2,
      `kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${uidA.replaceAll("-", "_")}.slice/cri-containerd-${cidA}.scope`,
    );
    const podB = new PodCgroup(v2, `kubepods/burstable/pod${uidB}/${cidB}`);
    const bystanderPod = new PodCgroup(v2, `kubepods/besteffort/pod${uidBystander}/${cidA}`);
    for (const c of [podA, podB, bystanderPod]) {
      if (!c.make()) return lacking(t, `${v2.mount} is not writable`);
      cgroups.push(c);
    }
    const backend = await holder();
    const [receiver, elsewhere] = await backend.open(
      { kind: "udp", family: "inet", bind: { address: "127.0.0.1", port: 0 } },
      2,
    );
    const port = receiver!.sport;
    const a = await holder(podA);
    const b = await holder(podB);
    const plain = await holder();
    const bystander = await holder(bystanderPod);
    const aSockets = await connected(a, port, 2);
    const bSockets = await connected(b, port);
    const plainSockets = await connected(plain, port);
    const aElsewhere = await connected(a, elsewhere!.sport);
    await connected(bystander, elsewhere!.sport);
    const inodes = (xs: readonly { inode: number }[]) => xs.map((s) => s.inode).sort((x, y) => x - y);
    const all = inodes([...aSockets, ...bSockets, ...plainSockets]);
    assert.deepEqual(await listed(port), all, "the scene's clients, before");

    const args = ["terminate-backend", `127.0.0.1:${port}`, "-N", ns.name, "--no-conntrack", "--dry-run"];
    const json = await sockdiag([...args, "-j"]);
    assert.equal(json.code, 0, json.stderr);
    const report = JSON.parse(json.stdout) as {
      total: { wouldDestroy: number; destroyed: number };
      byOwner: JsonPlanGroup[];
    };
    assert.deepEqual([report.total.wouldDestroy, report.total.destroyed], [4, 0]);
    const groups = report.byOwner.map((g) => ({
      netns: g.netns,
      owner: g.owner,
      pod: g.pod,
      pids: g.processes.map((p) => p.pid),
      wouldDestroy: g.wouldDestroy,
      inodes: inodes(g.sockets),
    }));
    const pods = [
      { pod: { uid: uidA, container: cidA }, holder: a, sockets: aSockets },
      { pod: { uid: uidB, container: cidB }, holder: b, sockets: bSockets },
    ].sort((x, y) => (x.pod.uid < y.pod.uid ? -1 : 1));
    const group = (
      owner: string,
      h: Holder,
      sockets: HeldSocket[],
      pod?: { uid: string; container: string },
    ) => ({
      netns: ns.name,
      owner,
      pod,
      pids: [h.pid],
      wouldDestroy: sockets.length,
      inodes: inodes(sockets),
    });
    assert.deepEqual(groups, [
      ...pods.map((p) => group("pod", p.holder, p.sockets, p.pod)),
      group("process", plain, plainSockets),
    ]);
    assert.ok(!json.stdout.includes(uidBystander), "the bystander pod is not named");
    assert.ok(
      !json.stdout.includes(`"inode": ${aElsewhere[0]!.inode}`),
      "a's socket connected elsewhere is not listed",
    );

    const text = await sockdiag(args);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /\nwould destroy, by owner:\n/);
    assert.match(
      text.stdout,
      new RegExp(
        `  pod ${uidA} container ${cidA.slice(0, 12)}  netns ${ns.name}  2 sockets\\n    processes: ${a.pid} \\(${commOf(a.pid)}\\)\\n`,
      ),
    );
    assert.match(
      text.stdout,
      new RegExp(`  pod ${uidB} container ${cidB.slice(0, 12)}  netns ${ns.name}  1 socket\\n`),
    );
    assert.match(
      text.stdout,
      new RegExp(
        `  not in a pod  netns ${ns.name}  1 socket\\n    processes: ${plain.pid} \\(${commOf(plain.pid)}\\)\\n`,
      ),
    );
    assert.ok(!text.stdout.includes(uidBystander), "the bystander pod is not named");

    assert.deepEqual(await listed(port), all, "nothing destroyed: the same clients, after");
    const pending = [
      ...(await a.poll(aSockets)),
      ...(await b.poll(bSockets)),
      ...(await plain.poll(plainSockets)),
    ];
    assert.ok(
      pending.every((e) => e === 0 || e === EAGAIN),
      `no error pending on the clients: ${pending}`,
    );
  });
});
