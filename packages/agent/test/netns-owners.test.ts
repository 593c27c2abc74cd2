/**
 * netnsOwners: the lookup and scan over a procfs of the test's own, and, as root, a holder process
 * in a real namespace and a real cgroup laid out as the kubelet lays one out. The cgroup reader's
 * golden lines are the core's (test/netns/pods.test.ts).
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { linkSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { netnsOwners } from "../src/netns-owners.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Holder,
  hierarchy,
  lacking,
  NETNS_DIR,
  PodCgroup,
  type ScratchNetns,
} from "./kit/index.js";

const CID = "4f6c2a9e0b1d3c5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";

/** The UID a cgroup of pod `n` of the fake tree names. */
const pod = (n: number) => `0000000${n}-0000-4000-8000-000000000000`;

/**
 * A procfs of the test's own: namespace files are plain files (hard links share their (dev,
 * inode), as every path of one namespace does), each process a directory with ns/net and cgroup.
 */
function fakeNode(): string {
  const root = mkdtempSync(join(tmpdir(), "sdt-owners-"));
  for (const dir of ["nsfs", "proc", "pins"]) mkdirSync(join(root, dir));
  for (const ns of ["host", "a", "b", "c"]) writeFileSync(join(root, "nsfs", ns), "");
  const proc = (entry: string, ns: string | undefined, cgroup: string | undefined) => {
    mkdirSync(join(root, "proc", entry, "ns"), { recursive: true });
    if (ns) linkSync(join(root, "nsfs", ns), join(root, "proc", entry, "ns", "net"));
    if (cgroup !== undefined) writeFileSync(join(root, "proc", entry, "cgroup"), `${cgroup}\n`);
  };
  const systemd = (n: number) =>
    `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${pod(n).replaceAll("-", "_")}.slice/cri-containerd-${CID}.scope`;
  proc("self", "host", "0::/system.slice/sockdiag-agent.service");
  proc("1", "host", "0::/init.scope");
  proc("2", "host", systemd(9)); // a hostNetwork pod
  proc("100", "a", systemd(1)); // pod 1's sandbox
  proc("101", "a", `12:memory:/kubepods/besteffort/pod${pod(1)}/${CID}\n0::/`);
  proc("102", "a", `0::/kubepods/pod${pod(2)}/${CID}`);
  proc("103", "a", undefined); // exited between the scan and the read of its cgroup
  proc("104", undefined, undefined); // exited before the scan looked at it
  proc("105", "a", undefined);
  mkdirSync(join(root, "proc", "105", "cgroup")); // cannot be read (EISDIR)
  proc("200", "b", "0::/system.slice/containerd.service");
  proc("300", "c", systemd(3));
  linkSync(join(root, "nsfs", "a"), join(root, "pins", "pod-a"));
  return root;
}

describe("netnsOwners over a procfs of the test's own", () => {
  let root: string;
  before(() => {
    root = fakeNode();
  });
  after(() => rmSync(root, { recursive: true, force: true }));

  test("each label of a report: its path now and its pods; what exited or cannot be read is passed over", async () => {
    const c = `net:[${statSync(join(root, "nsfs", "c")).ino}]`;
    const owners = await netnsOwners(["pod-a", "pid:200", "(host)", "gone", "pid:104", c, "pod-a"], {
      procRoot: join(root, "proc"),
      netnsDirs: [join(root, "missing"), join(root, "pins")],
    });
    assert.deepEqual(
      owners,
      new Map([
        ["pod-a", { path: join(root, "pins", "pod-a"), pods: [pod(1), pod(2)] }],
        ["pid:200", { path: join(root, "proc", "200", "ns", "net"), pods: [] }],
        ["(host)", { path: join(root, "proc", "self", "ns", "net"), pods: [pod(9)] }],
        ["gone", { pods: [] }],
        ["pid:104", { pods: [] }],
        [c, { pods: [pod(3)] }],
      ]),
    );
  });

  test("no labels: an empty answer", async () => {
    assert.deepEqual(await netnsOwners([], { procRoot: join(root, "missing") }), new Map());
  });
});

describeAsRoot("netnsOwners against the kernel", () => {
  let ns: ScratchNetns;
  const holders: Holder[] = [];
  const cgroups: PodCgroup[] = [];
  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("owners");
  });
  after(async () => {
    for (const c of cgroups.splice(0)) c.remove();
    await Promise.all(holders.splice(0).map((h) => h.stop()));
    await ns?.remove();
  });

  /** A holder in the namespace, put into `cgroup` when it can be made; undefined when it cannot. */
  async function holderIn(cgroup: PodCgroup): Promise<Holder | undefined> {
    if (!cgroup.make()) return undefined;
    cgroups.push(cgroup);
    const holder = await Holder.start({ netnsPath: ns.path });
    holders.push(holder);
    cgroup.enter(holder.pid);
    return holder;
  }

  test("a process in a systemd-driver pod cgroup (cgroup v2): its pod, by pin name and by pid", async (t) => {
    const v2 = hierarchy("cgroup2");
    if (!v2) return lacking(t, "no cgroup2 hierarchy mounted at its root");
    const uid = randomUUID();
    const slice = `kubepods-besteffort-pod${uid.replaceAll("-", "_")}.slice`;
    const holder = await holderIn(new PodCgroup(v2, `kubepods.slice/kubepods-besteffort.slice/${slice}`));
    if (!holder) return lacking(t, `${v2.mount} is not writable`);
    const owners = await netnsOwners([ns.name, `pid:${holder.pid}`], { netnsDirs: [NETNS_DIR] });
    assert.deepEqual(owners.get(ns.name), { path: ns.path, pods: [uid] });
    assert.deepEqual(owners.get(`pid:${holder.pid}`), { path: `/proc/${holder.pid}/ns/net`, pods: [uid] });
  });

  test("a process in a cgroupfs-driver pod cgroup (cgroup v1)", async (t) => {
    const v1 = hierarchy("cgroup", "pids");
    if (!v1) return lacking(t, "no cgroup v1 pids hierarchy mounted at its root");
    const uid = randomUUID();
    const holder = await holderIn(new PodCgroup(v1, `kubepods/burstable/pod${uid}`));
    if (!holder) return lacking(t, `${v1.mount} is not writable`);
    const owners = await netnsOwners([ns.name], { netnsDirs: [NETNS_DIR] });
    assert.ok(owners.get(ns.name)?.pods.includes(uid), JSON.stringify(owners.get(ns.name)));
  });
});
