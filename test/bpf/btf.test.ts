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
import { vmlinuxBtf } from "../../src/bpf/vmlinux.js";

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

/** A type as a straightforward parse decodes it: every record read whole, by id. */
interface FullType {
  readonly kind: number;
  readonly name: string;
  /** The header's third word: a size or a type id. */
  readonly sizeOrType: number;
  readonly bitfields: boolean;
  /** A struct's or union's members: name, type, offset word. */
  readonly members: readonly (readonly [string, number, number])[];
  /** An array's element type and count. */
  readonly array?: readonly [number, number];
}

/**
 * An independent oracle for the reader: every type of `data` decoded in file order with
 * readUInt32LE and its name as text, found by comparing names; members by path as btf.h says.
 */
function fullParse(data: Buffer) {
  const hdr = data.readUInt32LE(4);
  const typeStart = hdr + data.readUInt32LE(8);
  const typeEnd = typeStart + data.readUInt32LE(12);
  const strStart = hdr + data.readUInt32LE(16);
  const str = (off: number): string =>
    data.toString("latin1", strStart + off, data.indexOf(0, strStart + off));
  const types: FullType[] = [{ kind: 0, name: "", sizeOrType: 0, bitfields: false, members: [] }];
  for (let at = typeStart; at < typeEnd; ) {
    const info = data.readUInt32LE(at + 4);
    const kind = (info >>> 24) & 0x1f;
    const vlen = info & 0xffff;
    const members: [string, number, number][] = [];
    let array: [number, number] | undefined;
    let extra = 0;
    if (kind === Kind.STRUCT || kind === Kind.UNION) {
      for (let i = 0; i < vlen; i++) {
        const m = at + 12 + 12 * i;
        members.push([str(data.readUInt32LE(m)), data.readUInt32LE(m + 4), data.readUInt32LE(m + 8)]);
      }
      extra = 12 * vlen;
    } else if (kind === Kind.ARRAY) {
      array = [data.readUInt32LE(at + 12), data.readUInt32LE(at + 20)];
      extra = 12;
    } else if (kind === Kind.INT || kind === Kind.VAR || kind === Kind.DECL_TAG) extra = 4;
    else if (kind === Kind.ENUM || kind === Kind.FUNC_PROTO) extra = 8 * vlen;
    else if (kind === Kind.DATASEC || kind === Kind.ENUM64) extra = 12 * vlen;
    types.push({
      kind,
      name: str(data.readUInt32LE(at)),
      sizeOrType: data.readUInt32LE(at + 8),
      bitfields: info >>> 31 === 1,
      members,
      ...(array ? { array } : {}),
    });
    at += 12 + extra;
  }
  const find = (kind: number, name: string): number =>
    types.findIndex((t) => t.kind === kind && t.name === name);
  const resolve = (id: number): number => {
    const qualifiers: number[] = [Kind.TYPEDEF, Kind.VOLATILE, Kind.CONST, Kind.RESTRICT, Kind.TYPE_TAG];
    let current = id;
    while (qualifiers.includes((types[current] as FullType).kind))
      current = (types[current] as FullType).sizeOrType;
    return current;
  };
  const size = (id: number): number => {
    const t = types[resolve(id)] as FullType;
    if (t.kind === Kind.PTR) return 8;
    if (t.array) return size(t.array[0]) * t.array[1];
    return t.sizeOrType;
  };
  /** [bit offset, type] of member `name` in composite `id`, through anonymous members. */
  const memberIn = (id: number, name: string): [number, number] | undefined => {
    const t = types[resolve(id)] as FullType;
    for (const [memberName, type, raw] of t.members) {
      const bits = t.bitfields ? raw & 0xffffff : raw;
      if (memberName === "") {
        const inner = memberIn(type, name);
        if (inner) return [bits + inner[0], inner[1]];
      } else if (memberName === name) return [bits, resolve(type)];
    }
    return undefined;
  };
  const member = (struct: string, path: string): { offset: number; size: number; type: number } => {
    let type = find(Kind.STRUCT, struct);
    if (type < 0) type = find(Kind.UNION, struct);
    let bits = 0;
    for (const step of path.split(".")) {
      const found = memberIn(type, step);
      assert.ok(found, `${struct}.${path}`);
      bits += found[0];
      type = found[1];
    }
    return { offset: bits / 8, size: size(type), type };
  };
  return { types, find, member };
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

  test("it reads what a straightforward full parse reads: the layout, ids, names, members", () => {
    const data = vmlinuxBtf().data;
    const btf = Btf.parse(data);
    const full = fullParse(data);
    assert.equal(btf.count, full.types.length - 1);
    for (const [struct, path] of Object.values(FIELDS)) {
      assert.deepEqual(btf.member(struct, path), full.member(struct, path), `${struct}.${path}`);
    }
    assert.equal(taskFileLayout(btf).attachBtfId, full.find(Kind.FUNC, "bpf_iter_task_file"));
    // A sample of named types of every kind across the whole file: found by name, the first of
    // their kind and name; kind and name read back by id.
    let compared = 0;
    for (let id = 1; id < full.types.length; id += 97) {
      const t = full.types[id] as FullType;
      assert.equal(btf.kind(id), t.kind, `kind of ${id}`);
      assert.equal(btf.name(id), t.name, `name of ${id}`);
      if (t.name === "") continue;
      assert.equal(btf.find(t.kind, t.name), full.find(t.kind, t.name), `${t.name} (kind ${t.kind})`);
      compared++;
    }
    assert.ok(compared > 500, `${compared} names compared`);
    // Every whole-byte named member of the structs the program reads, at any depth of anonymity.
    for (const struct of new Set(Object.values(FIELDS).map(([s]) => s))) {
      const t = full.types[full.find(Kind.STRUCT, struct)] as FullType;
      for (const [name, , raw] of t.members) {
        const bits = t.bitfields ? raw & 0xffffff : raw;
        if (name === "" || (t.bitfields && raw >>> 24 !== 0) || bits % 8 !== 0) continue;
        assert.deepEqual(btf.member(struct, name), full.member(struct, name), `${struct}.${name}`);
      }
    }
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

  /** BTF data of `words` (type records, 32-bit each) and `strings`. */
  const btfOf = (words: readonly number[], strings: string): Buffer => {
    const types = Buffer.alloc(4 * words.length);
    for (const [i, word] of words.entries()) types.writeUInt32LE(word >>> 0, 4 * i);
    const text = Buffer.from(strings, "latin1");
    return Buffer.concat([header(types.length, text.length), types, text]);
  };
  const info = (kind: number, vlen = 0): number => ((kind << 24) | vlen) >>> 0;

  test("a malformed type section is a BtfError naming what is wrong, never a crash or a hang", () => {
    // strings: "\0s\0m\0"; [1] struct s { [2] m; } with [2] as given
    const strings = "\0s\0m\0";
    const withMember = (...second: number[]): Buffer =>
      btfOf([1, info(Kind.STRUCT, 1), 8, 3, 2, 0, ...second], strings);
    // the member's type is past the last id
    assert.throws(() => Btf.parse(btfOf([1, info(Kind.STRUCT, 1), 8, 3, 7, 0], strings)).member("s", "m"), {
      name: "BtfError",
      message: /no BTF type 7/,
    });
    // a typedef of itself
    assert.throws(() => Btf.parse(withMember(0, info(Kind.TYPEDEF), 2)).member("s", "m"), {
      name: "BtfError",
      message: /typedef chain too long/,
    });
    // an array of itself
    assert.throws(() => Btf.parse(withMember(0, info(Kind.ARRAY), 0, 2, 2, 4)).member("s", "m"), {
      name: "BtfError",
      message: /arrays nested too deep/,
    });
    // an anonymous member of its own type: found nowhere, searched no deeper than a bound
    assert.throws(() => Btf.parse(btfOf([1, info(Kind.STRUCT, 1), 8, 0, 1, 0], strings)).member("s", "m"), {
      name: "BtfError",
      message: /anonymous members nested too deep/,
    });
    // a struct whose members run past the section
    assert.throws(() => Btf.parse(btfOf([1, info(Kind.STRUCT, 2), 8, 3, 1, 0], strings)), {
      name: "BtfError",
      message: /runs past the type section/,
    });
    // a section that is not whole words
    assert.throws(() => Btf.parse(Buffer.concat([header(13, 1), Buffer.alloc(14)])), {
      name: "BtfError",
      message: /runs past the type section/,
    });
  });

  test("the kernel's BTF cut short or with bytes changed reads as a BtfError or reads, never anything else", () => {
    const data = vmlinuxBtf().data;
    const readAll = (bytes: Buffer): void => {
      try {
        taskFileLayout(Btf.parse(bytes));
      } catch (err) {
        assert.equal((err as Error).name, "BtfError", String(err));
      }
    };
    for (const length of [0, 23, 24, 4096, data.length >>> 1, data.length - 1]) {
      assert.throws(() => Btf.parse(data.subarray(0, length)), { name: "BtfError" }, `${length} bytes`);
    }
    // Random words of the type section and the header changed (a fixed seed: the same every run).
    let seed = 42;
    const random = (below: number): number => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % below;
    };
    const typesEnd = 24 + data.readUInt32LE(12);
    for (let round = 0; round < 40; round++) {
      const bytes = Buffer.from(data);
      for (let i = 0; i < 8; i++) {
        const at = round < 10 ? random(24) : 24 + 4 * random((typesEnd - 24) >>> 2);
        bytes[at + random(4)] = random(256);
      }
      readAll(bytes);
    }
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
