/**
 * A reader of the kernel's BTF (vmlinux.ts reads it; layout: include/uapi/linux/btf.h): only
 * what a loader needs — a type by kind and name, a struct member's offset and size by path
 * (through anonymous members and typedefs), a function's id. Type ids count from 1 in file order.
 */
import { BtfError } from "./errors.js";
import { readBtfFile, vmlinuxBtf } from "./vmlinux.js";

const BTF_MAGIC = 0xeb9f;
const TYPE_HEADER = 12;

/** BTF kinds (BTF_KIND_*). */
export const Kind = {
  INT: 1,
  PTR: 2,
  ARRAY: 3,
  STRUCT: 4,
  UNION: 5,
  ENUM: 6,
  FWD: 7,
  TYPEDEF: 8,
  VOLATILE: 9,
  CONST: 10,
  RESTRICT: 11,
  FUNC: 12,
  FUNC_PROTO: 13,
  VAR: 14,
  DATASEC: 15,
  FLOAT: 16,
  DECL_TAG: 17,
  TYPE_TAG: 18,
  ENUM64: 19,
} as const;

/** A struct member found by path: where it starts and how many bytes it spans. */
export interface Member {
  /** Bytes from the start of the outer struct. */
  readonly offset: number;
  /** Bytes of the member's type (typedefs and qualifiers resolved). */
  readonly size: number;
  /** The member's type id, qualifiers and typedefs skipped. */
  readonly type: number;
}

export class Btf {
  readonly #data: Buffer;
  readonly #types: number;
  readonly #strings: number;
  readonly #stringsEnd: number;
  /** Where each type's record starts, by id (index 0 unused: void). */
  readonly #at: Uint32Array;
  /** Each type's kind and name offset, by id, for finding by name. */
  readonly #kinds: Uint8Array;
  readonly #names: Uint32Array;

  private constructor(data: Buffer) {
    if (data.length < 24 || data.readUInt16LE(0) !== BTF_MAGIC) {
      throw new BtfError("not BTF data (bad magic)");
    }
    const headerLength = data.readUInt32LE(4);
    this.#types = headerLength + data.readUInt32LE(8);
    const typesEnd = this.#types + data.readUInt32LE(12);
    this.#strings = headerLength + data.readUInt32LE(16);
    this.#stringsEnd = this.#strings + data.readUInt32LE(20);
    if (typesEnd > data.length || this.#stringsEnd > data.length) throw new BtfError("truncated BTF data");
    this.#data = data;
    const { at, kinds, names } = this.#index(typesEnd);
    this.#at = at;
    this.#kinds = kinds;
    this.#names = names;
  }

  /** The BTF of the running kernel, or of `data` (a test's). */
  static parse(data: Buffer): Btf {
    return new Btf(data);
  }

  /**
   * The running kernel's BTF (vmlinuxBtf: its object through bpf(), or /sys/kernel/btf/vmlinux),
   * or the file at `path` when one is given; BtfError ("cannot read") when there is none.
   */
  static vmlinux(path?: string): Btf {
    return new Btf(path === undefined ? vmlinuxBtf().data : readBtfFile(path));
  }

  /** How many types (the highest id). */
  get count(): number {
    return this.#at.length - 1;
  }

  /** Each type's record offset, kind and name offset, by id: one walk of the type section. */
  #index(end: number): { at: Uint32Array; kinds: Uint8Array; names: Uint32Array } {
    // Every record is at least a header long: room for the most there can be.
    const most = 1 + Math.floor((end - this.#types) / TYPE_HEADER);
    const at = new Uint32Array(most);
    const kinds = new Uint8Array(most);
    const names = new Uint32Array(most);
    // Records are whole 32-bit words from the section's start, read as such (in the host's
    // order: the data's, as the magic's check found).
    const base = this.#data.byteOffset + this.#types;
    const length = (end - this.#types) >>> 2;
    const words =
      base % 4 === 0
        ? new Uint32Array(this.#data.buffer, base, length)
        : new Uint32Array(Uint8Array.prototype.slice.call(this.#data, this.#types, end).buffer, 0, length);
    let count = 1;
    let word = 0;
    while (word < length) {
      const info = words[word + 1] ?? 0;
      at[count] = this.#types + 4 * word;
      kinds[count] = (info >>> 24) & 0x1f;
      names[count++] = words[word] as number;
      word += (TYPE_HEADER + extraBytes(info, this.#types + 4 * word)) >>> 2;
    }
    if (4 * word !== end - this.#types) throw new BtfError("a type record runs past the type section");
    return { at: at.subarray(0, count), kinds: kinds.subarray(0, count), names: names.subarray(0, count) };
  }

  #record(id: number): number {
    const at = this.#at[id];
    if (id <= 0 || at === undefined) throw new BtfError(`no BTF type ${id}`);
    return at;
  }

  kind(id: number): number {
    return (this.#data.readUInt32LE(this.#record(id) + 4) >>> 24) & 0x1f;
  }

  name(id: number): string {
    return this.#string(this.#data.readUInt32LE(this.#record(id)));
  }

  #string(offset: number): string {
    const start = this.#strings + offset;
    const end = this.#data.indexOf(0, start);
    if (start >= this.#stringsEnd || end < 0 || end > this.#stringsEnd)
      throw new BtfError("a name runs past the strings");
    return this.#data.toString("latin1", start, end);
  }

  /** The id of the type of `kind` named `name` (the first in file order); BtfError when the kernel has none. */
  find(kind: number, name: string): number {
    const wanted = Buffer.from(name, "latin1");
    for (let id = 1; id < this.#kinds.length; id++) {
      if (this.#kinds[id] === kind && this.#nameIs(this.#names[id] as number, wanted)) return id;
    }
    throw new BtfError(`the kernel's BTF has no ${kindName(kind)} ${name}`);
  }

  /** Whether the string at `offset` of the string section is `wanted`, whole. */
  #nameIs(offset: number, wanted: Buffer): boolean {
    const data = this.#data;
    const start = this.#strings + offset;
    const end = start + wanted.length;
    if (end >= this.#stringsEnd || data[end] !== 0) return false;
    for (let i = 0; i < wanted.length; i++) if (data[start + i] !== wanted[i]) return false;
    return true;
  }

  /** `id` with typedefs and qualifiers (const, volatile, restrict, type tags) skipped. */
  resolve(id: number): number {
    let current = id;
    for (let hops = 0; hops < 64; hops++) {
      const kind = this.kind(current);
      if (
        kind !== Kind.TYPEDEF &&
        kind !== Kind.VOLATILE &&
        kind !== Kind.CONST &&
        kind !== Kind.RESTRICT &&
        kind !== Kind.TYPE_TAG
      ) {
        return current;
      }
      current = this.#data.readUInt32LE(this.#record(current) + 8);
    }
    throw new BtfError(`type ${id}: a typedef chain too long`);
  }

  /** Bytes of a type: ints, structs, unions, enums, pointers (8), arrays. */
  size(id: number): number {
    const resolved = this.resolve(id);
    const at = this.#record(resolved);
    switch (this.kind(resolved)) {
      case Kind.PTR:
        return 8;
      case Kind.ARRAY: {
        const element = this.#data.readUInt32LE(at + TYPE_HEADER);
        return this.size(element) * this.#data.readUInt32LE(at + TYPE_HEADER + 8);
      }
      case Kind.INT:
      case Kind.STRUCT:
      case Kind.UNION:
      case Kind.ENUM:
      case Kind.ENUM64:
      case Kind.FLOAT:
        return this.#data.readUInt32LE(at + 8);
      default:
        throw new BtfError(`type ${id} (${kindName(this.kind(resolved))}) has no size`);
    }
  }

  /** For a PTR type (after typedefs), the type it points to, resolved. */
  pointee(id: number): number {
    const resolved = this.resolve(id);
    if (this.kind(resolved) !== Kind.PTR) throw new BtfError(`type ${id} is not a pointer`);
    return this.resolve(this.#data.readUInt32LE(this.#record(resolved) + 8));
  }

  /**
   * The member of struct or union `structName` at `path` ("__sk_common.skc_family"): each step
   * names a member of the previous one's type, found also inside anonymous structs and unions.
   * Bitfields are refused: a loader reads whole bytes.
   */
  member(structName: string, path: string): Member {
    let type = this.#findComposite(structName);
    let offset = 0;
    let size = 0;
    for (const step of path.split(".")) {
      const found = this.#memberIn(type, step, Buffer.from(step, "latin1"));
      if (!found) throw new BtfError(`struct ${structName} has no member ${path} (no ${step})`);
      offset += found.offset;
      type = found.type;
      size = this.size(type);
    }
    return { offset, size, type };
  }

  #findComposite(name: string): number {
    try {
      return this.find(Kind.STRUCT, name);
    } catch {
      return this.find(Kind.UNION, name);
    }
  }

  /** Member `name` of composite `id`, searched through anonymous members; offsets in bytes. */
  #memberIn(id: number, name: string, wanted: Buffer): { offset: number; type: number } | undefined {
    const resolved = this.resolve(id);
    const kind = this.kind(resolved);
    if (kind !== Kind.STRUCT && kind !== Kind.UNION) return undefined;
    const at = this.#record(resolved);
    const info = this.#data.readUInt32LE(at + 4);
    const bitfields = info >>> 31 === 1;
    const vlen = info & 0xffff;
    for (let i = 0; i < vlen; i++) {
      const m = at + TYPE_HEADER + 12 * i;
      const memberName = this.#data.readUInt32LE(m);
      const type = this.#data.readUInt32LE(m + 4);
      const raw = this.#data.readUInt32LE(m + 8);
      const bitOffset = bitfields ? raw & 0xffffff : raw;
      const bitSize = bitfields ? raw >>> 24 : 0;
      if (memberName === 0) {
        const inner = this.#memberIn(type, name, wanted);
        if (inner) return { offset: bitOffset / 8 + inner.offset, type: inner.type };
        continue;
      }
      if (!this.#nameIs(memberName, wanted)) continue;
      if (bitSize !== 0 || bitOffset % 8 !== 0) {
        throw new BtfError(`member ${name} of ${this.name(resolved) || "an anonymous type"} is a bitfield`);
      }
      return { offset: bitOffset / 8, type: this.resolve(type) };
    }
    return undefined;
  }
}

/**
 * Bytes after a type's 12-byte header, by kind (btf.h: what follows each kind): FIXED bytes plus
 * PER_VLEN bytes for each of its vlen entries; a kind absent from FIXED is unknown. Tables, not a
 * switch over Kind's properties: the index walks ~126,000 records in a just-started process, and a
 * case first met after V8 optimized the walk (a rare kind) would throw the optimized code away.
 */
const FIXED = new Int8Array(32).fill(-1);
const PER_VLEN = new Uint8Array(32);
for (const kind of [Kind.INT, Kind.VAR, Kind.DECL_TAG]) FIXED[kind] = 4;
FIXED[Kind.ARRAY] = 12;
for (const kind of [Kind.STRUCT, Kind.UNION, Kind.DATASEC, Kind.ENUM64]) {
  FIXED[kind] = 0;
  PER_VLEN[kind] = 12;
}
for (const kind of [Kind.ENUM, Kind.FUNC_PROTO]) {
  FIXED[kind] = 0;
  PER_VLEN[kind] = 8;
}
for (const kind of [
  Kind.PTR,
  Kind.FWD,
  Kind.TYPEDEF,
  Kind.VOLATILE,
  Kind.CONST,
  Kind.RESTRICT,
  Kind.FUNC,
  Kind.FLOAT,
  Kind.TYPE_TAG,
]) {
  FIXED[kind] = 0;
}

/** Bytes after a type's 12-byte header, from its info word; BtfError for an unknown kind. */
function extraBytes(info: number, at: number): number {
  const kind = (info >>> 24) & 0x1f;
  const fixed = FIXED[kind] as number;
  if (fixed < 0) throw new BtfError(`unknown BTF kind ${kind} at byte ${at}`);
  return fixed + (PER_VLEN[kind] as number) * (info & 0xffff);
}

function kindName(kind: number): string {
  const entry = Object.entries(Kind).find(([, value]) => value === kind);
  return entry ? entry[0].toLowerCase() : `kind ${kind}`;
}
