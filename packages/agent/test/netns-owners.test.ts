/**
 * netnsOwners: the cgroup reader against golden lines written from the kubelet's naming rules
 * (pkg/kubelet/cm/cgroup_manager_linux.go: "pod" + UID under kubepods[/qos]; the systemd driver
 * nests slices whose names carry their parents', "-" in a part escaped as "_"), the lookup and
 * scan over a procfs of the test's own, and, as root, a holder process in a real namespace and a
 * real cgroup laid out as the kubelet lays one out.
 */
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { linkSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, type TestContext, test } from "node:test";
import fc from "fast-check";
import { netnsOwners, podUidOfCgroupPath, podUidsOfCgroup } from "../src/netns-owners.js";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  Holder,
  hierarchy,
  NETNS_DIR,
  PodCgroup,
  type ScratchNetns,
} from "./kit/index.js";

const UID = "1234abcd-5678-4def-9abc-0123456789ab";
const ESCAPED = "1234abcd_5678_4def_9abc_0123456789ab";
// A static pod's UID: the hex of a hash, no dashes.
const STATIC = "e3b0c44298fc1c149afbf4c8996fb924";
const CID = "4f6c2a9e0b1d3c5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";

describe("the pod UID of a cgroup line", () => {
  const named: [string, string][] = [
    [
      "v2, systemd driver, Burstable",
      `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${ESCAPED}.slice/cri-containerd-${CID}.scope`,
    ],
    [
      "v2, systemd driver, BestEffort (the sandbox's pause process)",
      `0::/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod${ESCAPED}.slice/cri-containerd-${CID}.scope`,
    ],
    ["v2, systemd driver, Guaranteed", `0::/kubepods.slice/kubepods-pod${ESCAPED}.slice/crio-${CID}.scope`],
    [
      "v2, systemd driver, a pod slice with no container yet",
      `0::/kubepods.slice/kubepods-pod${ESCAPED}.slice`,
    ],
    ["v2, cgroupfs driver, Burstable", `0::/kubepods/burstable/pod${UID}/${CID}`],
    ["v2, cgroupfs driver, Guaranteed", `0::/kubepods/pod${UID}/${CID}`],
    ["v1, cgroupfs driver", `12:memory:/kubepods/besteffort/pod${UID}/${CID}`],
    [
      "v1, systemd driver, docker's scope",
      `4:cpu,cpuacct:/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${ESCAPED}.slice/docker-${CID}.scope`,
    ],
    [
      "kind (cgroup root /kubelet, systemd driver)",
      `0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/kubelet-kubepods-besteffort-pod${ESCAPED}.slice/cri-containerd-${CID}.scope`,
    ],
    ["k3s in docker (cgroupfs)", `0::/docker/${CID}/kubepods/burstable/pod${UID}/${CID}`],
    ["docker-in-docker, v1", `9:pids:/docker/${CID}/kubepods/pod${UID}/${CID}`],
    [
      "read from another cgroup namespace, systemd driver",
      `0::/../../../kubepods-burstable.slice/kubepods-burstable-pod${ESCAPED}.slice/cri-containerd-${CID}.scope`,
    ],
    ["read from another cgroup namespace, cgroupfs, Burstable", `0::/../../../burstable/pod${UID}/${CID}`],
    ["read from another cgroup namespace, cgroupfs, Guaranteed", `0::/../../pod${UID}/${CID}`],
  ];
  for (const [what, line] of named) {
    test(what, () => {
      assert.deepEqual(podUidsOfCgroup(line), [UID]);
    });
  }

  test("a static pod's UID, with either driver", () => {
    assert.deepEqual(podUidsOfCgroup(`0::/kubepods/burstable/pod${STATIC}/${CID}`), [STATIC]);
    assert.deepEqual(
      podUidsOfCgroup(
        `0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${STATIC}.slice/x.scope`,
      ),
      [STATIC],
    );
  });

  test("v1 names the pod once per hierarchy: told once; lines apart from the pod's add nothing", () => {
    const text = [
      `12:memory:/kubepods/besteffort/pod${UID}/${CID}`,
      `11:cpu,cpuacct:/kubepods/besteffort/pod${UID}/${CID}`,
      `1:name=systemd:/kubepods/besteffort/pod${UID}/${CID}`,
      "0::/",
      "",
    ].join("\n");
    assert.deepEqual(podUidsOfCgroup(text), [UID]);
  });

  test("no pod: the host, services, sessions, containers outside Kubernetes, near misses", () => {
    const none = [
      "0::/",
      "0::/init.scope",
      "0::/system.slice/containerd.service",
      "0::/user.slice/user-1000.slice/session-3.scope",
      `0::/system.slice/docker-${CID}.scope`,
      `0::/docker/${CID}`,
      "12:memory:/kubepods/burstable",
      "0::/kubepods.slice/kubepods-burstable.slice",
      `0::/pod${UID}/${CID}`, // not under kubepods
      `0::/kubepods/burstable/other/pod${UID}`, // not directly under the QoS level
      "0::/kubepods/burstable/podnot-a-uid/x",
      `0::/kubepods.slice/kubepods-burstable-pod${UID}.slice`, // systemd never leaves a "-" in a part
      `0::/kubepods-burstable-pod${ESCAPED}.scope`,
      "no colons at all",
      "",
    ];
    for (const line of none) assert.deepEqual(podUidsOfCgroup(line), [], line);
  });

  test("any text: never throws, names only UIDs", () => {
    const uid = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
    const part = fc.oneof(
      fc.constantFrom("kubepods", "burstable", "..", `pod${UID}`, `kubepods-pod${ESCAPED}.slice`, "x.scope"),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts) => {
        const found = podUidOfCgroupPath(`/${parts.join("/")}`);
        assert.ok(found === undefined || uid.test(found), found);
      }),
    );
  });
});

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

/** Skip loudly: this machine lacks what the test needs, which is no failure of the code. */
function lacking(t: TestContext, what: string): void {
  process.stderr.write(`\n*** SKIPPED: ${t.name}: ${what} ***\n\n`);
  t.skip(what);
}

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
