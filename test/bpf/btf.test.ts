/**
 * The BTF reader against independent oracles: bpftool's own reading of the kernel's BTF (its type
 * ids), and gcc's offsetof and sizeof over the C header bpftool writes from it — for every field
 * the socket-finding program reads.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { Btf, Kind } from "../../src/bpf/btf.js";
import { BtfError } from "../../src/bpf/errors.js";
import { FIELDS, taskFileLayout } from "../../src/bpf/layout.js";

/** offsetof and sizeof of each (struct, path), as gcc computes them from bpftool's vmlinux.h. */
function compiledLayout(fields: readonly (readonly [string, string])[]): Map<string, [number, number]> {
  const dir = mkdtempSync(join(tmpdir(), "sockdiag-btf-"));
  try {
    execFileSync("sh", ["-c", `bpftool btf dump file /sys/kernel/btf/vmlinux format c > ${dir}/vmlinux.h`]);
    const lines = fields.map(
      ([s, p]) =>
        `__builtin_printf("${s} ${p} %lu %lu\\n", (unsigned long)__builtin_offsetof(struct ${s}, ${p}), (unsigned long)sizeof(((struct ${s} *)0)->${p}));`,
    );
    writeFileSync(
      join(dir, "layout.c"),
      `#include "vmlinux.h"\nint main(void) {\n${lines.join("\n")}\nreturn 0;\n}\n`,
    );
    execFileSync("gcc", ["-w", "-o", join(dir, "layout"), join(dir, "layout.c")]);
    const out = new Map<string, [number, number]>();
    for (const line of execFileSync(join(dir, "layout"), { encoding: "utf8" }).trim().split("\n")) {
      const [s, p, offset, size] = line.split(" ");
      out.set(`${s} ${p}`, [Number(offset), Number(size)]);
    }
    return out;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** bpftool's id of the type of `kind` (its raw dump's spelling: STRUCT, FUNC) named `name`. */
function bpftoolId(kind: string, name: string): number {
  const raw = execFileSync("bpftool", ["btf", "dump", "file", "/sys/kernel/btf/vmlinux", "format", "raw"], {
    encoding: "utf8",
    maxBuffer: 1 << 28,
  });
  const m = new RegExp(`^\\[(\\d+)\\] ${kind} '${name}' `, "m").exec(raw);
  assert.ok(m, `bpftool lists no ${kind} ${name}`);
  return Number(m[1]);
}

describe("the kernel's BTF", () => {
  test("every field the program reads is where gcc puts it in bpftool's vmlinux.h, of its width", () => {
    const btf = Btf.vmlinux();
    const specs = Object.values(FIELDS).map(([s, p]) => [s, p] as const);
    const compiled = compiledLayout(specs);
    for (const [struct, path] of specs) {
      const member = btf.member(struct, path);
      assert.deepEqual([member.offset, member.size], compiled.get(`${struct} ${path}`), `${struct}.${path}`);
    }
    const layout = taskFileLayout(btf);
    assert.deepEqual(layout.fields.netInum, { offset: btf.member("net", "ns.inum").offset, size: 4 });
  });

  test("type ids are bpftool's: the iterator target's function, struct sock", () => {
    const btf = Btf.vmlinux();
    assert.equal(btf.find(Kind.FUNC, "bpf_iter_task_file"), bpftoolId("FUNC", "bpf_iter_task_file"));
    assert.equal(btf.find(Kind.STRUCT, "sock"), bpftoolId("STRUCT", "sock"));
    assert.equal(taskFileLayout(btf).attachBtfId, bpftoolId("FUNC", "bpf_iter_task_file"));
  });

  test("what it cannot give is a BtfError naming it", () => {
    const btf = Btf.vmlinux();
    assert.throws(() => btf.find(Kind.STRUCT, "no_such_struct_sockdiag"), {
      name: "BtfError",
      message: /no struct no_such_struct_sockdiag/,
    });
    assert.throws(() => btf.member("sock", "__sk_common.no_such_member"), {
      name: "BtfError",
      message: /struct sock has no member __sk_common.no_such_member \(no no_such_member\)/,
    });
    // a bitfield of struct sock: a loader reads whole bytes only
    assert.throws(() => btf.member("sock", "sk_kern_sock"), {
      name: "BtfError",
      message: /sk_kern_sock .*bitfield/,
    });
    assert.throws(() => Btf.vmlinux("/nonexistent/vmlinux"), {
      name: "BtfError",
      message: /cannot read \/nonexistent\/vmlinux: ENOENT/,
    });
  });
});

describe("BTF data", () => {
  const header = (typeLen: number, strLen: number): Buffer => {
    const h = Buffer.alloc(24);
    h.writeUInt16LE(0xeb9f, 0);
    h.writeUInt8(1, 2);
    h.writeUInt32LE(24, 4);
    h.writeUInt32LE(0, 8);
    h.writeUInt32LE(typeLen, 12);
    h.writeUInt32LE(typeLen, 16);
    h.writeUInt32LE(strLen, 20);
    return h;
  };

  test("a struct with an anonymous union inside, built by hand, reads back", () => {
    // strings: "\0int\0outer\0a\0b\0"
    const strings = Buffer.from("\0int\0outer\0a\0b\0", "latin1");
    const types = Buffer.alloc(16 + 12 + 12 * 2 + 12 + 12 * 1);
    let at = 0;
    const typeHeader = (name: number, kind: number, vlen: number, sizeOrType: number, flag = 0): void => {
      types.writeUInt32LE(name, at);
      types.writeUInt32LE((flag << 31) | (kind << 24) | vlen, at + 4);
      types.writeUInt32LE(sizeOrType, at + 8);
      at += 12;
    };
    const member = (name: number, type: number, bitOffset: number): void => {
      types.writeUInt32LE(name, at);
      types.writeUInt32LE(type, at + 4);
      types.writeUInt32LE(bitOffset, at + 8);
      at += 12;
    };
    typeHeader(1, Kind.INT, 0, 4); // [1] int, 4 bytes
    types.writeUInt32LE(32, at);
    at += 4;
    typeHeader(5, Kind.STRUCT, 2, 16); // [2] struct outer { int a; union { int b; }; }
    member(11, 1, 0);
    member(0, 3, 64);
    typeHeader(0, Kind.UNION, 1, 4); // [3] the anonymous union
    member(13, 1, 0);
    const btf = Btf.parse(Buffer.concat([header(types.length, strings.length), types, strings]));
    assert.equal(btf.count, 3);
    assert.equal(btf.find(Kind.STRUCT, "outer"), 2);
    assert.deepEqual(btf.member("outer", "b"), { offset: 8, size: 4, type: 1 });
    assert.deepEqual(btf.member("outer", "a"), { offset: 0, size: 4, type: 1 });
  });

  test("bad or truncated data is a BtfError", () => {
    assert.throws(() => Btf.parse(Buffer.alloc(24)), { name: "BtfError", message: /bad magic/ });
    assert.throws(() => Btf.parse(header(100, 10)), { name: "BtfError", message: /truncated/ });
    const unknownKind = Buffer.alloc(12);
    unknownKind.writeUInt32LE(31 << 24, 4);
    assert.throws(() => Btf.parse(Buffer.concat([header(12, 1), unknownKind, Buffer.alloc(1)])), {
      name: "BtfError",
      message: /unknown BTF kind 31/,
    });
    assert.ok(new BtfError("x") instanceof Error);
  });
});
