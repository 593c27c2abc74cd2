import assert from "node:assert/strict";
import { existsSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { hierarchy, lacking, PodCgroup } from "../kit/pod-cgroup.js";
import { requireRoot } from "../kit/root.js";

test("pod cgroups sharing the parents they made are all removed, in whatever order", (t) => {
  if (!requireRoot(t)) return;
  const v2 = hierarchy("cgroup2");
  if (!v2) return lacking(t, "no cgroup2 hierarchy mounted at its root");
  const top = `sdt-kit-${process.pid}.slice`;
  const parent = `${top}/${top.replace(".slice", "-besteffort.slice")}`;
  const pods = ["a", "b", "c"].map((p) => new PodCgroup(v2, `${parent}/pod-${p}.slice`));
  for (const pod of pods) if (!pod.make()) return lacking(t, `${v2.mount} is not writable`);
  const removed: string[] = [];
  // In the order they were made: the first made the parents, which still hold the others' pods.
  for (const pod of pods) {
    pod.remove();
    removed.push(pod.path);
    assert.ok(!existsSync(join(v2.mount, pod.path)), `${pod.path} is removed with its pod`);
    assert.equal(
      existsSync(join(v2.mount, parent)),
      removed.length < pods.length,
      "the parents go with the last pod",
    );
  }
  assert.ok(!existsSync(join(v2.mount, top)));
});
