/**
 * The kernel's BTF read three ways: /sys/kernel/btf/vmlinux mapped (6.16 on), its vmlinux object
 * through bpf() and the file read give the same bytes and the same layout; where the file cannot
 * be mapped (a seam here) the bpf() way is taken, and where that fails too (a seam; CAP_SYS_ADMIN
 * dropped in a child for the kernel's own refusal) the file is read; none is a BtfError.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { readdirSync, readFileSync, readlinkSync } from "node:fs";
import { release } from "node:os";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { Btf } from "../../src/bpf/btf.js";
import { BtfError } from "../../src/bpf/errors.js";
import { taskFileLayout } from "../../src/bpf/layout.js";
import { kernelVmlinuxBtf, mapBtfFile, VMLINUX_BTF, vmlinuxBtf } from "../../src/bpf/vmlinux.js";
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
/** What mapping the file gives before 6.16: kernfs maps no bin attribute without an mmap of its own. */
const noMapping = new SysError("mmap", Errno.ENODEV, VMLINUX_BTF);
const unmappable = (): Buffer => {
  throw noMapping;
};
/** Whether the running kernel maps /sys/kernel/btf/vmlinux (6.16 on). */
const [major = 0, minor = 0] = release().split(".").map(Number);
const kernelMaps = major > 6 || (major === 6 && minor >= 16);

describeAsRoot("the kernel's BTF mapped, through bpf() and read from sysfs", () => {
  test("the same bytes and the same layout (every offset and width the loader takes, the attach id)", () => {
    const fromKernel = kernelVmlinuxBtf();
    const fromFile = readFileSync(VMLINUX_BTF);
    assert.ok(fromKernel.length > 1 << 20, `${fromKernel.length} bytes`);
    assert.ok(fromKernel.equals(fromFile), "the same bytes");
    assert.deepEqual(taskFileLayout(Btf.parse(fromKernel)), taskFileLayout(Btf.parse(fromFile)));
    if (kernelMaps) {
      const fromMapping = mapBtfFile(VMLINUX_BTF);
      assert.ok(fromMapping.equals(fromFile), "the same bytes mapped");
      assert.deepEqual(taskFileLayout(Btf.parse(fromMapping)), taskFileLayout(Btf.parse(fromFile)));
    }
  });

  test("the file is mapped where the kernel maps it (6.16 on), once a process; else bpf() copies it; no descriptor stays open", () => {
    const before = openFds();
    const read = vmlinuxBtf();
    assert.equal(read.source, kernelMaps ? "map" : "bpf");
    assert.equal(read.refused, undefined);
    if (kernelMaps) assert.equal(vmlinuxBtf().data, read.data, "the same mapping");
    else assert.equal(read.unmapped?.code, "ENODEV");
    assert.deepEqual(openFds(), before);
    const copied = vmlinuxBtf(kernelVmlinuxBtf, VMLINUX_BTF, unmappable);
    assert.equal(copied.source, "bpf");
    assert.equal(copied.unmapped, noMapping);
    assert.deepEqual(openFds(), before);
  });

  test("without CAP_SYS_ADMIN the file is mapped still, and where it is not, read (the kernel refuses BPF_BTF_GET_NEXT_ID)", async () => {
    const module = fileURLToPath(new URL("../../src/bpf/vmlinux.js", import.meta.url));
    const errors = fileURLToPath(new URL("../../src/sys/errors.js", import.meta.url));
    /** vmlinuxBtf() in a child without CAP_SYS_ADMIN, the file's mapping refused (ENODEV) or not. */
    const readInChild = async (mapping: boolean): Promise<unknown> => {
      const map = mapping ? "undefined" : '() => { throw new e.SysError("mmap", e.Errno.ENODEV); }';
      const script = `Promise.all([import(${JSON.stringify(module)}), import(${JSON.stringify(errors)})]).then(([m, e]) => { const r = m.vmlinuxBtf(undefined, undefined, ${map}); console.log(JSON.stringify({ source: r.source, code: r.refused?.code, length: r.data.length })); })`;
      const { stdout, stderr } = await promisify(execFile)(
        "setpriv",
        ["--bounding-set=-sys_admin", "--inh-caps=-sys_admin", "--", process.execPath, "-e", script],
        { maxBuffer: 1 << 20 },
      ).catch((err: { stdout: string; stderr: string }) => err);
      assert.equal(startFailure(stderr), undefined, stderr);
      return JSON.parse(stdout);
    };
    const length = readFileSync(VMLINUX_BTF).length;
    assert.deepEqual(await readInChild(false), { source: "file", code: "EPERM", length });
    assert.deepEqual(
      await readInChild(true),
      kernelMaps ? { source: "map", length } : { source: "file", code: "EPERM", length },
    );
  });
});

test("where the bpf() way fails with a SysError or BtfError, the file is read, with why", () => {
  const file = readFileSync(VMLINUX_BTF);
  const noObject = new BtfError("the kernel holds no vmlinux BTF object");
  for (const error of [refusal, noObject]) {
    const read = vmlinuxBtf(
      () => {
        throw error;
      },
      VMLINUX_BTF,
      unmappable,
    );
    assert.equal(read.source, "file");
    assert.equal(read.refused, error);
    assert.equal(read.unmapped, noMapping);
    assert.ok(read.data.equals(file));
  }
});

test("where no way gives it: a BtfError saying why each way failed; a bug in the mapping or the bpf() way is thrown as is", () => {
  const refuse = (): Buffer => {
    throw refusal;
  };
  assert.throws(
    () => vmlinuxBtf(refuse, "/nonexistent/vmlinux"),
    (err: unknown) => {
      assert.ok(err instanceof BtfError);
      assert.match(
        err.message,
        /^cannot read \/nonexistent\/vmlinux: ENOENT \(nor mapped: .*ENOENT.*; nor through bpf\(\): bpf\(BPF_BTF_GET_NEXT_ID\) failed: EPERM/,
      );
      return true;
    },
  );
  const bug = new TypeError("a bug");
  const throwBug = (): Buffer => {
    throw bug;
  };
  assert.throws(
    () => vmlinuxBtf(throwBug, VMLINUX_BTF, unmappable),
    (err: unknown) => err === bug,
  );
  assert.throws(
    () => vmlinuxBtf(refuse, VMLINUX_BTF, throwBug),
    (err: unknown) => err === bug,
  );
});
