/**
 * A pass the verifier refuses, on the real kernel: the pass's program replaced (through the
 * terminator's seam) by one the verifier refuses, loaded through the real bpf() call. "auto"
 * walks every namespace with the reason in a note, as without the pass; "on" throws
 * OnePassUnavailableError naming it; nothing stays open or loaded either way — and the same where
 * the pass ran but its second look is refused. Without onePass, a terminator runs as "auto".
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Assembler } from "../../src/bpf/asm.js";
import { findConnectedSockets, kernelLayout } from "../../src/bpf/index.js";
import { loadIteratorProgram } from "../../src/bpf/iterator.js";
import { BackendTerminator, type FindSockets, OnePassUnavailableError } from "../../src/terminator/index.js";
import { bpfFds, describeAsRoot, loadedBpfSettled } from "../kit/index.js";

/** A pass whose program never sets r0 before exit ("R0 !read_ok"). */
const refused: FindSockets = () => {
  loadIteratorProgram({
    name: "sockdiag_refused",
    insns: new Assembler().exit().build(),
    attachBtfId: kernelLayout().attachBtfId,
  });
  throw new Error("the verifier accepted a program that never sets r0");
};

/** The real pass, whose second look loads a program the verifier refuses. */
const secondRefused: FindSockets = (options) => {
  const pass = findConnectedSockets(options);
  return { ...pass, seenAgain: () => refused(options) as never };
};

const backend = { address: "127.0.0.83", port: 9 };
const config = { discover: false, conntrack: false } as const;

describeAsRoot("a one pass the verifier refuses", () => {
  test("auto walks every namespace with the verifier's reason in a note; nothing stays", async () => {
    const fds = bpfFds();
    const report = new BackendTerminator({ ...config, onePass: "auto" }, { find: refused }).terminateMany([
      backend,
    ]);
    assert.equal(report.onePass?.used, false);
    assert.equal(report.onePass?.reason, "verifier");
    assert.match(report.onePass?.message ?? "", /sockdiag_refused: EACCES: .*R0 !read_ok/);
    assert.ok(report.notes.some((n) => n.netns === "(one pass)" && n.skipped === "verifier"));
    // Walked as without the pass: no namespace decided by it.
    assert.ok(report.namespaces.length > 0);
    assert.ok(report.namespaces.every((n) => n.onePass === undefined && !n.ruledOut));
    assert.deepEqual(
      report.namespaces,
      new BackendTerminator({ ...config, onePass: "off" }).terminateMany([backend]).namespaces,
    );
    assert.equal(report.ok, true);
    assert.deepEqual(bpfFds(), fds, "no BPF descriptor left open");
    assert.deepEqual(await loadedBpfSettled(), [], "nothing left loaded");
  });

  test("on throws OnePassUnavailableError naming the verifier; nothing stays", async () => {
    const fds = bpfFds();
    assert.throws(
      () => new BackendTerminator({ ...config, onePass: "on" }, { find: refused }).terminateMany([backend]),
      (err: unknown) =>
        err instanceof OnePassUnavailableError &&
        err.reason === "verifier" &&
        /R0 !read_ok/.test(err.message),
    );
    assert.deepEqual(bpfFds(), fds, "no BPF descriptor left open");
    assert.deepEqual(await loadedBpfSettled(), [], "nothing left loaded");
  });
});

describeAsRoot("a second look the verifier refuses", () => {
  test("auto walks every namespace with the verifier's reason; on throws naming it; nothing stays", async () => {
    const fds = bpfFds();
    const report = new BackendTerminator(
      { ...config, onePass: "auto" },
      { find: secondRefused },
    ).terminateMany([backend]);
    assert.equal(report.onePass?.used, false);
    assert.equal(report.onePass?.reason, "verifier");
    assert.ok(report.namespaces.length > 0);
    assert.ok(report.namespaces.every((n) => n.onePass === undefined && !n.ruledOut));
    assert.throws(
      () =>
        new BackendTerminator({ ...config, onePass: "on" }, { find: secondRefused }).terminateMany([backend]),
      (err: unknown) => err instanceof OnePassUnavailableError && err.reason === "verifier",
    );
    assert.deepEqual(bpfFds(), fds, "no BPF descriptor left open");
    assert.deepEqual(await loadedBpfSettled(), [], "nothing left loaded");
  });
});

describeAsRoot("the one pass by default", () => {
  test("a terminator without onePass runs as auto: the pass over every namespace, its summary in the report", () => {
    const report = new BackendTerminator(config).terminateMany([backend]);
    assert.equal(report.onePass?.mode, "auto");
    assert.equal(report.onePass?.used, true, report.onePass?.message);
    assert.ok(report.namespaces.every((n) => n.onePass !== undefined));
  });
});
