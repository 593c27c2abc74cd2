/**
 * The one pass against the walk, on the real kernel (a differential test): the same scene built
 * twice — the host and seven namespaces, UDP clients of a backend over IPv4, IPv6 and v4-mapped
 * IPv6, clients of other ports (many beside one client of the backend in "crowd"), an unconnected
 * socket on the backend's port, and a client passed over SCM_RIGHTS and still in flight (no task
 * holds it: the pass cannot see it, the namespace's counters can), beside a socket never bound
 * (which the counters do not count) or a socket held twice (which the pass counts once) —
 * terminated once with `onePass: "off"` and once with "on": the same sockets are destroyed, with
 * the same totals per namespace; with "on" each namespace says how it was decided (found, walked,
 * ruled out): only those holding a socket no task holds are walked, and nothing stays loaded. With CAP_BPF, CAP_PERFMON and
 * CAP_SYS_ADMIN dropped (capsh), or the kernel's BTF hidden, "auto" walks, with the reason in a
 * note, and "on" throws OnePassUnavailableError.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  AF_INET,
  close,
  connect,
  getsockoptInt,
  IPPROTO_UDP,
  SOCK_DGRAM,
  SOL_SOCKET,
  socket,
} from "../../src/sys/socket.js";
import {
  BackendTerminator,
  type BatchTerminationReport,
  OnePassUnavailableError,
} from "../../src/terminator/index.js";

const SO_ERROR = 4;

import { bpfFds, describeAsRoot, loadedBpfSettled, sockaddrIn, withNetns } from "../kit/index.js";
import { ECONNABORTED, errorsOf, type Held, holdIn, PORT, V4 } from "./one-pass-holder.js";

/** What each namespace of the scene holds. */
const CROWD = 40;
const SCENE: Record<string, string[]> = {
  found: ["v4", "v4m"],
  crowd: ["v4", ...Array<string>(CROWD).fill("other")],
  elsewhere: ["v6", "other"],
  empty: [],
  flight: ["flight", "unbound"],
  shared: ["dup", "flight"],
  listener: ["listener"],
};

interface Outcome {
  report: BatchTerminationReport;
  /** Per scene namespace: each socket's kind and SO_ERROR after the run. */
  errors: Record<string, [string, number][]>;
  host: number;
  names: Record<string, string>;
}

/** Build the scene, terminate the backend with `onePass`, and read what each socket says. */
async function run(onePass: "on" | "off"): Promise<Outcome> {
  return withNetns(Object.keys(SCENE).length, async (nss) => {
    const held: Record<string, Held> = {};
    const names: Record<string, string> = {};
    const hostSocket = socket(AF_INET, SOCK_DGRAM, IPPROTO_UDP);
    try {
      connect(hostSocket, sockaddrIn(V4, PORT));
      for (const [i, [label, kinds]] of Object.entries(SCENE).entries()) {
        const ns = nss[i]!;
        await ns.ip("link", "set", "lo", "up");
        names[label] = ns.name;
        if (kinds.length > 0) held[label] = await holdIn(ns, kinds);
      }
      const fds = bpfFds();
      const report = new BackendTerminator({ discover: false, conntrack: false, onePass }).terminateMany([
        { address: V4, port: PORT },
      ]);
      assert.deepEqual(bpfFds(), fds, "no BPF descriptor left open");
      const errors: Outcome["errors"] = {};
      for (const [label, h] of Object.entries(held)) errors[label] = await errorsOf(h);
      const host = getsockoptInt(hostSocket, SOL_SOCKET, SO_ERROR);
      return { report, errors, host, names };
    } finally {
      close(hostSocket);
      for (const h of Object.values(held)) h.child.kill();
    }
  });
}

/** A namespace's counts as the differential test compares them. */
const counts = (report: BatchTerminationReport, name: string) => {
  const n = report.namespaces.find((x) => x.netns === name);
  const r = n?.report;
  return r && { matched: r.matched, destroyed: r.destroyed, gone: r.gone, failed: r.failed.length };
};

const EXPECTED: Record<string, [string, number][]> = {
  found: [
    ["v4", ECONNABORTED],
    ["v4m", ECONNABORTED],
  ],
  crowd: [["v4", ECONNABORTED], ...Array.from({ length: CROWD }, (): [string, number] => ["other", 0])],
  elsewhere: [
    ["v6", 0],
    ["other", 0],
  ],
  flight: [
    ["flight", ECONNABORTED],
    ["unbound", 0],
  ],
  shared: [
    ["dup", 0],
    ["flight", ECONNABORTED],
  ],
  listener: [["listener", 0]],
};

describeAsRoot("the one pass against the walk", () => {
  test("both paths destroy the same sockets, with the same totals, in every namespace", async () => {
    const off = await run("off");
    const on = await run("on");
    for (const outcome of [off, on]) {
      assert.deepEqual(outcome.errors, EXPECTED);
      assert.equal(outcome.host, ECONNABORTED, "the host's client");
    }
    assert.equal(off.report.onePass, undefined);
    assert.deepEqual(on.report.onePass?.used, true);
    for (const label of Object.keys(SCENE))
      assert.deepEqual(counts(on.report, on.names[label]!), counts(off.report, off.names[label]!), label);
    assert.deepEqual(counts(on.report, "(host)"), counts(off.report, "(host)"));
    assert.equal(on.report.total.destroyed, off.report.total.destroyed);
    assert.equal(on.report.ok, true);
    const how = (label: string) => on.report.namespaces.find((n) => n.netns === on.names[label]);
    assert.match(how("found")?.onePass ?? "", /^2 found by the one pass/);
    // Every UDP socket of these is held by a task: the counters say nothing more is there.
    assert.match(how("crowd")?.onePass ?? "", new RegExp(`^1 found by the one pass \\(UDP ${CROWD + 1}, `));
    assert.match(how("crowd")?.onePass ?? "", new RegExp(`tasks hold ${CROWD + 1} and 0`));
    for (const label of ["elsewhere", "empty", "listener"]) {
      assert.equal(how(label)?.ruledOut, true, label);
      assert.match(how(label)?.onePass ?? "", /^ruled out by the one pass/, label);
    }
    // Walked: their counters count the socket in flight, beside one never bound (counted by
    // neither) or one held twice (counted once).
    for (const label of ["flight", "shared"])
      assert.match(how(label)?.onePass ?? "", /exceed what tasks hold/, label);
    assert.match(how("flight")?.onePass ?? "", /UDP 1, UDP6 0; tasks hold 0 and 0/);
    assert.match(how("shared")?.onePass ?? "", /UDP 2, UDP6 0; tasks hold 1 and 0/);
    assert.deepEqual(await loadedBpfSettled(), [], "nothing left loaded");
  });

  test("without the privileges, auto walks with a note and on throws OnePassUnavailableError", () => {
    const script = fileURLToPath(new URL("./one-pass-child.js", import.meta.url));
    const drop = "--drop=cap_bpf,cap_perfmon,cap_sys_admin";
    const runChild = (mode: string) =>
      JSON.parse(
        execFileSync("capsh", [drop, "--", "-c", `exec "$0" "$1" "$2"`, process.execPath, script, mode], {
          encoding: "utf8",
        }),
      ) as { onePass?: { used: boolean; reason?: string }; notes: { skipped: string }[]; error?: string };
    const auto = runChild("auto");
    assert.equal(auto.onePass?.used, false);
    assert.equal(auto.onePass?.reason, "privileges");
    assert.ok(auto.notes.some((n) => n.skipped === "privileges"));
    assert.equal(runChild("on").error, new OnePassUnavailableError("privileges", "").name);
  });

  test("without the kernel's BTF (hidden in a mount namespace), auto walks with a note and on throws", () => {
    const script = fileURLToPath(new URL("./one-pass-child.js", import.meta.url));
    // CAP_SYS_ADMIN dropped too (CAP_BPF and CAP_PERFMON kept): with it, bpf() copies the
    // kernel's BTF object, which no mount hides.
    const runChild = (mode: string) =>
      JSON.parse(
        execFileSync(
          "unshare",
          [
            "-m",
            "sh",
            "-c",
            'mount --bind /dev/null /sys/kernel/btf/vmlinux && exec setpriv --bounding-set=-sys_admin --inh-caps=-sys_admin -- "$0" "$1" "$2"',
            process.execPath,
            script,
            mode,
          ],
          { encoding: "utf8" },
        ),
      ) as { onePass?: { used: boolean; reason?: string }; notes: { skipped: string }[]; error?: string };
    const auto = runChild("auto");
    assert.equal(auto.onePass?.used, false);
    assert.ok(["no-btf", "kernel"].includes(auto.onePass?.reason ?? ""), auto.onePass?.reason);
    assert.ok(auto.notes.some((n) => n.skipped === auto.onePass?.reason));
    assert.equal(runChild("on").error, "OnePassUnavailableError");
  });
});
