/**
 * The kernel's BTF read two ways: its vmlinux object through bpf() and /sys/kernel/btf/vmlinux
 * give the same bytes and the same layout; where the bpf() way fails (a seam here; CAP_SYS_ADMIN
 * dropped in a child for the kernel's own refusal) the file is read; neither is a BtfError.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Btf } from "../../src/bpf/btf.js";
import { BtfError } from "../../src/bpf/errors.js";
import { taskFileLayout } from "../../src/bpf/layout.js";
import { kernelVmlinuxBtf, VMLINUX_BTF, vmlinuxBtf } from "../../src/bpf/vmlinux.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { describeAsRoot, startFailure } from "../kit/index.js";

/** What this process holds open: each descriptor and what it names. */
function openFds(): string[] {
  return readdirSync("/proc/self/fd").flatMap((fd) => {
    try {
      return [`${fd} ${readlinkSync(`/proc/self/fd/${fd}`)}`];
    } catch {
      return []; // readdir's own descriptor, closed by now
    }
  });
}

const refusal = new SysError("bpf", Errno.EPERM, "BPF_BTF_GET_NEXT_ID");

describeAsRoot("the kernel's BTF through bpf() and through sysfs", () => {
  test("the same bytes and the same layout (every offset and width the loader takes, the attach id)", () => {
    const fromKernel = kernelVmlinuxBtf();
    const fromFile = readFileSync(VMLINUX_BTF);
    assert.ok(fromKernel.length > 1 << 20, `${fromKernel.length} bytes`);
    assert.ok(fromKernel.equals(fromFile), "the same bytes");
    assert.deepEqual(taskFileLayout(Btf.parse(fromKernel)), taskFileLayout(Btf.parse(fromFile)));
  });

  test("as root the bpf() way is taken, and leaves no descriptor open", () => {
    const before = openFds();
    const read = vmlinuxBtf();
    assert.equal(read.source, "bpf");
    assert.equal(read.refused, undefined);
    assert.deepEqual(openFds(), before);
  });

  test("without CAP_SYS_ADMIN (the kernel refuses BPF_BTF_GET_NEXT_ID) the file is read", async () => {
    const module = fileURLToPath(new URL("../../src/bpf/vmlinux.js", import.meta.url));
    const script = `import(${JSON.stringify(module)}).then((m) => { const r = m.vmlinuxBtf(); console.log(JSON.stringify({ source: r.source, code: r.refused?.code, length: r.data.length })); })`;
    const { stdout, stderr } = await promisify(execFile)(
      "setpriv",
      ["--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--", process.execPath, "-e", script],
      { maxBuffer: 1 << 20 },
    ).catch((err: { stdout: string; stderr: string }) => err);
    assert.equal(startFailure(stderr), undefined, stderr);
    assert.deepEqual(JSON.parse(stdout), {
      source: "file",
      code: "EPERM",
      length: readFileSync(VMLINUX_BTF).length,
    });
  });
});

test("where the bpf() way fails with a SysError or BtfError, the file is read, with why", () => {
  const file = readFileSync(VMLINUX_BTF);
  const noObject = new BtfError("the kernel holds no vmlinux BTF object");
  for (const error of [refusal, noObject]) {
    const read = vmlinuxBtf(() => {
      throw error;
    });
    assert.equal(read.source, "file");
    assert.equal(read.refused, error);
    assert.ok(read.data.equals(file));
  }
});

test("where neither way gives it: a BtfError saying both; a bug in the bpf() way is thrown as is", () => {
  const refuse = (): Buffer => {
    throw refusal;
  };
  assert.throws(
    () => vmlinuxBtf(refuse, "/nonexistent/vmlinux"),
    (err: unknown) => {
      assert.ok(err instanceof BtfError);
      assert.match(
        err.message,
        /^cannot read \/nonexistent\/vmlinux: ENOENT \(nor through bpf\(\): bpf\(BPF_BTF_GET_NEXT_ID\) failed: EPERM/,
      );
      return true;
    },
  );
  const bug = new TypeError("a bug");
  assert.throws(
    () =>
      vmlinuxBtf(() => {
        throw bug;
      }),
    (err: unknown) => err === bug,
  );
});
