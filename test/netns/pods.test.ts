/**
 * The pod and container of a process's cgroup, against golden lines written from the kubelet's
 * naming rules (pkg/kubelet/cm/cgroup_manager_linux.go: "pod" + UID under kubepods[/qos]; the
 * systemd driver nests slices whose names carry their parents', "-" in a part escaped as "_") and
 * the runtimes' (containerd, CRI-O, docker: the container's id, alone or after a prefix, a systemd
 * scope).
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { podOfCgroupPath, podsOfCgroupFile } from "../../src/netns/index.js";

const UID = "1234abcd-5678-4def-9abc-0123456789ab";
const ESCAPED = "1234abcd_5678_4def_9abc_0123456789ab";
// A static pod's UID: the hex of a hash, no dashes.
const STATIC = "e3b0c44298fc1c149afbf4c8996fb924";
const CID = "4f6c2a9e0b1d3c5e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6";

const uids = (text: string) => podsOfCgroupFile(text).map((p) => p.uid);

describe("the pod of a cgroup line", () => {
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
      const container = line.endsWith(".slice") ? {} : { container: CID };
      assert.deepEqual(podsOfCgroupFile(line), [{ uid: UID, ...container }]);
    });
  }

  test("the container: CRI-O's prefix under the cgroupfs driver; conmon's scope and other levels are none", () => {
    assert.deepEqual(podsOfCgroupFile(`0::/kubepods/besteffort/pod${UID}/crio-${CID}`), [
      { uid: UID, container: CID },
    ]);
    for (const below of [`crio-conmon-${CID}.scope`, "x.scope", CID.slice(1), `${CID}0`])
      assert.deepEqual(podsOfCgroupFile(`0::/kubepods/pod${UID}/${below}`), [{ uid: UID }], below);
  });

  test("a hierarchy naming the pod without its container adds nothing to one naming both", () => {
    const text = `12:memory:/kubepods/pod${UID}\n11:pids:/kubepods/pod${UID}/${CID}\n0::/`;
    assert.deepEqual(podsOfCgroupFile(text), [{ uid: UID, container: CID }]);
  });

  test("a static pod's UID, with either driver", () => {
    assert.deepEqual(uids(`0::/kubepods/burstable/pod${STATIC}/${CID}`), [STATIC]);
    assert.deepEqual(
      uids(`0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${STATIC}.slice/x.scope`),
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
    assert.deepEqual(podsOfCgroupFile(text), [{ uid: UID, container: CID }]);
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
    for (const line of none) assert.deepEqual(podsOfCgroupFile(line), [], line);
  });

  test("any text: never throws, names only UIDs and container ids", () => {
    const uid = /^([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
    const part = fc.oneof(
      fc.constantFrom(
        "kubepods",
        "burstable",
        "..",
        `pod${UID}`,
        `kubepods-pod${ESCAPED}.slice`,
        "x.scope",
        `crio-${CID}.scope`,
        CID,
      ),
      fc.string(),
    );
    fc.assert(
      fc.property(fc.array(part, { maxLength: 6 }), (parts) => {
        const found = podOfCgroupPath(`/${parts.join("/")}`);
        assert.ok(found === undefined || uid.test(found.uid), found?.uid);
        assert.ok(found?.container === undefined || /^[0-9a-f]{64}$/.test(found.container), found?.container);
      }),
    );
  });
});
