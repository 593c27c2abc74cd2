/**
 * Loading, attaching and reading an iterator program on the real kernel: a program the verifier
 * refuses is a VerifierError carrying the verifier's log, a load that fails for want of a
 * descriptor a SysError; nothing stays loaded or open after a pass or a refusal (this process's
 * descriptors, and bpftool's lists).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { test } from "node:test";
import { Assembler } from "../../src/bpf/asm.js";
import { Btf, Kind } from "../../src/bpf/btf.js";
import { VerifierError } from "../../src/bpf/errors.js";
import { loadIteratorProgram, readIterator } from "../../src/bpf/iterator.js";
import { close } from "../../src/sys/socket.js";
import { bpfFds, describeAsRoot, loadedBpf, loadedBpfSettled } from "../kit/index.js";

const taskFile = (): number => Btf.vmlinux().find(Kind.FUNC, "bpf_iter_task_file");

describeAsRoot("iterator programs", () => {
  test("a program the verifier refuses is a VerifierError with the log, and leaves nothing", async () => {
    const before = bpfFds();
    // r0 is never set before exit: "R0 !read_ok"
    const insns = new Assembler().exit().build();
    const err = (() => {
      try {
        loadIteratorProgram({ name: "sockdiag_bad", insns, attachBtfId: taskFile() });
      } catch (e) {
        return e;
      }
      return undefined;
    })();
    assert.ok(err instanceof VerifierError, `not a VerifierError: ${err}`);
    assert.equal(err.code, "ERR_SOCKDIAG_VERIFIER");
    assert.equal(err.errno, 13); // EACCES
    assert.match(err.log, /R0 !read_ok/);
    assert.match(err.message, /sockdiag_bad: EACCES: .*R0 !read_ok/);
    assert.deepEqual(bpfFds(), before);
    assert.deepEqual(await loadedBpfSettled(), []);
  });

  test("a program reading a context field past its end is refused with the verifier's reason", async () => {
    const insns = new Assembler().load(8, 2, 1, 4096).movImm(0, 0).exit().build();
    assert.throws(() => loadIteratorProgram({ name: "sockdiag_bad", insns, attachBtfId: taskFile() }), {
      name: "VerifierError",
      log: /invalid bpf_context access|access beyond/,
    });
    assert.deepEqual(await loadedBpfSettled(), []);
  });

  test("a program that writes each file's descriptor number is read back whole, then nothing stays", async () => {
    const before = bpfFds();
    // *(u32 *)(fp - 8) = ctx->fd; seq_write(ctx->meta->seq, fp - 8, 4) for each file
    const btf = Btf.vmlinux();
    const fd = btf.member("bpf_iter__task_file", "fd").offset;
    const file = btf.member("bpf_iter__task_file", "file").offset;
    const seq = btf.member("bpf_iter_meta", "seq").offset;
    const a = new Assembler()
      .mov(6, 1)
      .load(8, 2, 6, file)
      .jumpIf(2, "==", 0, "out")
      .load(4, 3, 6, fd)
      .store(4, 10, -8, 3)
      .load(8, 1, 6, 0)
      .load(8, 1, 1, seq)
      .mov(2, 10)
      .addImm(2, -8)
      .movImm(3, 4)
      .call("seq_write")
      .label("out")
      .movImm(0, 0)
      .exit();
    const progFd = loadIteratorProgram({ name: "sockdiag_fds", insns: a.build(), attachBtfId: taskFile() });
    let reads = 0;
    let records = 0;
    let stdin = 0;
    try {
      assert.ok(
        loadedBpf().some((line) => / sockdiag_fds$/.test(line)),
        "bpftool lists the program while it is loaded",
      );
      readIterator(progFd, (buffer, length) => {
        reads++;
        const whole = length - (length % 4);
        for (let at = 0; at < whole; at += 4) {
          records++;
          if (buffer.readUInt32LE(at) === 0) stdin++;
        }
        return whole;
      });
    } finally {
      close(progFd);
    }
    // every process with a descriptor 0 wrote one; this one among them
    assert.ok(
      reads >= 1 && records > stdin && stdin >= 1,
      `${reads} reads, ${records} records, ${stdin} fd 0`,
    );
    assert.deepEqual(bpfFds(), before);
    assert.deepEqual(await loadedBpfSettled(), []);
  });

  test("a load with no descriptor left is a SysError EMFILE, not a verifier's refusal", () => {
    // In a child that fills its descriptor table first: the verifier accepts, the new descriptor fails.
    const iterator = new URL("../../src/bpf/iterator.js", import.meta.url).href;
    const btf = new URL("../../src/bpf/btf.js", import.meta.url).href;
    const asm = new URL("../../src/bpf/asm.js", import.meta.url).href;
    const child = `
      import { openSync } from "node:fs";
      const { loadIteratorProgram } = await import(${JSON.stringify(iterator)});
      const { Btf, Kind } = await import(${JSON.stringify(btf)});
      const { Assembler } = await import(${JSON.stringify(asm)});
      const attachBtfId = Btf.vmlinux().find(Kind.FUNC, "bpf_iter_task_file");
      const insns = new Assembler().movImm(0, 0).exit().build();
      let filled = 0;
      try { for (;;) { openSync("/dev/null"); filled++; } } catch (err) { if (err.code !== "EMFILE") throw err; }
      try {
        loadIteratorProgram({ name: "sockdiag_nofd", insns, attachBtfId });
        console.log(JSON.stringify({ loaded: true }));
      } catch (err) {
        console.log(JSON.stringify({ name: err.name, code: err.code, filled }));
      }`;
    const r = spawnSync(process.execPath, ["--input-type=module", "-e", child], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { name?: string; code?: string; filled?: number };
    assert.equal(out.name, "SysError", r.stdout);
    assert.equal(out.code, "EMFILE");
    assert.ok((out.filled ?? 0) > 0);
  });
});
