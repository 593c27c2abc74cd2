/**
 * onePassAvailability on the real kernel: available as root; with capabilities dropped (setpriv,
 * as root: node never runs as another user) or in a PID namespace of its own (unshare), it says
 * why, as a typed reason; a refusal of each kind maps to its reason.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { onePassAvailability, unavailableBecause } from "../../src/bpf/availability.js";
import { BtfError, VerifierError } from "../../src/bpf/errors.js";
import { SysError } from "../../src/sys/errors.js";
import { describeAsRoot, loadedBpfSettled, startFailure, WITHOUT_CAPABILITIES } from "../kit/index.js";

const MODULE = fileURLToPath(new URL("../../src/bpf/availability.js", import.meta.url));
const SCRIPT = `import(${JSON.stringify(MODULE)}).then((m) => console.log(JSON.stringify(m.onePassAvailability())))`;

/** onePassAvailability's answer in a node started by `prefix` (setpriv, unshare). */
async function availabilityUnder(
  prefix: readonly string[],
): Promise<{ available: boolean; reason?: string; message?: string }> {
  const [cmd, ...args] = [...prefix, process.execPath, "-e", SCRIPT];
  const { stdout, stderr } = await promisify(execFile)(cmd as string, args).catch(
    (err: { stdout: string; stderr: string }) => err,
  );
  assert.equal(startFailure(stderr), undefined, stderr);
  return JSON.parse(stdout) as { available: boolean; reason?: string; message?: string };
}

describeAsRoot("one-pass availability", () => {
  test("as root in the initial PID namespace it is available, and leaves nothing loaded", async () => {
    assert.deepEqual(onePassAvailability(), { available: true });
    assert.deepEqual(await loadedBpfSettled(), []);
  });

  test("without any capability: privileges", async () => {
    const answer = await availabilityUnder(WITHOUT_CAPABILITIES);
    assert.equal(answer.available, false);
    assert.equal(answer.reason, "privileges");
    assert.match(answer.message ?? "", /CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN/);
  });

  test("without CAP_SYS_ADMIN but with CAP_BPF and CAP_PERFMON: available; without CAP_BPF too: privileges", async () => {
    const drop = (caps: string): string[] => [
      "setpriv",
      `--bounding-set=${caps}`,
      `--inh-caps=${caps}`,
      "--",
    ];
    assert.deepEqual(await availabilityUnder(drop("-sys_admin")), { available: true });
    const answer = await availabilityUnder(drop("-sys_admin,-bpf"));
    assert.equal(answer.reason, "privileges");
  });

  test("in a PID namespace of its own: pid-namespace", async () => {
    const answer = await availabilityUnder(["unshare", "--pid", "--fork"]);
    assert.equal(answer.available, false);
    assert.equal(answer.reason, "pid-namespace");
    assert.match(answer.message ?? "", /pid:\[\d+\]/);
  });
});

test("each kind of refusal maps to its reason", () => {
  const reason = (err: unknown): string | undefined => {
    const a = unavailableBecause(err);
    return a === undefined || a.available ? undefined : a.reason;
  };
  assert.equal(reason(new VerifierError("p", 13, "EACCES", "R0 !read_ok")), "verifier");
  assert.equal(reason(new BtfError("cannot read /sys/kernel/btf/vmlinux: ENOENT")), "no-btf");
  assert.equal(reason(new BtfError("the kernel's BTF has no func bpf_iter_task_file")), "kernel");
  assert.equal(reason(new SysError("bpf", 1)), "privileges");
  assert.equal(reason(new SysError("bpf", 22)), "kernel");
  assert.equal(unavailableBecause(new TypeError("a bug")), undefined, "none of a probe's kinds");
});
