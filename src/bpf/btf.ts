/**
 * A reader of the kernel's BTF (vmlinux.ts reads it; layout: include/uapi/linux/btf.h): only
 * what a loader needs — a type by kind and name, a struct member's offset and size by path
 * (through anonymous members and typedefs), a function's id. Type ids count from 1 in file order.
 */
import { BtfError } from "./errors.js";
import { readBtfFile, vmlinuxBtf } from "./vmlinux.js";

const BTF_MAGIC = 0xeb9f;
const NUL = Buffer.alloc(1);

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
  readonly #strings: number;
  readonly #stringsEnd: number;
  /** The type section as 32-bit words: every record is whole words (btf.h). */
  readonly #words: Uint32Array;
  /** Where each type's record starts, in words of the type section, by id (index 0 unused: void). */
  readonly #at: Uint32Array;
  /** What find answered, by kind and name: a layout asks for the same struct many times. */
  readonly #found = new Map<string, number>();

  private constructor(data: Buffer) {
    if (data.length < 24 || data.readUInt16LE(0) !== BTF_MAGIC) {
      throw new BtfError("not BTF data (bad magic)");
    }
    const headerLength = data.readUInt32LE(4);
    const types = headerLength + data.readUInt32LE(8);
    const typesEnd = types + data.readUInt32LE(12);
    this.#strings = headerLength + data.readUInt32LE(16);
    this.#stringsEnd = this.#strings + data.readUInt32LE(20);
    if (typesEnd > data.length || this.#stringsEnd > data.length) throw new BtfError("truncated BTF data");
    this.#data = data;
    // Read in the host's order: the data's, as the magic's check found.
    const base = data.byteOffset + types;
    const length = (typesEnd - types) >>> 2;
    this.#words =
      base % 4 === 0
        ? new Uint32Array(data.buffer, base, length)
        : new Uint32Array(Uint8Array.prototype.slice.call(data, types, typesEnd).buffer, 0, length);
    if (4 * length !== typesEnd - types) throw new BtfError("a type record runs past the type section");
    this.#at = walk(this.#words, types);
  }

  /** The BTF of the running kernel, or of `data` (a test's). */
  static parse(data: Buffer): Btf {
    return new Btf(data);
  }

  /**
   * The running kernel's BTF (vmlinuxBtf: /sys/kernel/btf/vmlinux mapped, its object through
   * bpf(), or that file read), or the file at `path` when one is given; BtfError ("cannot read")
   * when there is none.
   */
  static vmlinux(path?: string): Btf {
    return new Btf(path === undefined ? vmlinuxBtf().data : readBtfFile(path));
  }

  /** How many types (the highest id). */
  get count(): number {
    return this.#at.length - 1;
  }

  /** The word of the type section where type `id`'s record starts. */
  #record(id: number): number {
    const at = this.#at[id];
    if (id <= 0 || at === undefined) throw new BtfError(`no BTF type ${id}`);
    return at;
  }

  kind(id: number): number {
    return ((this.#words[this.#record(id) + 1] as number) >>> 24) & 0x1f;
  }

  name(id: number): string {
    return this.#string(this.#words[this.#record(id)] as number);
  }

  #string(offset: number): string {
    const start = this.#strings + offset;
    const end = this.#data.indexOf(0, start);
    if (start >= this.#stringsEnd || end < 0 || end > this.#stringsEnd)
      throw new BtfError("a name runs past the strings");
    return this.#data.toString("latin1", start, end);
  }

  /**
   * The id of the type of `kind` named `name` (the first in file order); BtfError when the kernel
   * has none. Found without reading every type's name: the name's offset is that of its text in
   * the string section, found natively (BTF writers, pahole and libbpf, store each string once,
   * and every name points at the start of one), then the first record starting with that offset
   * among the type section's words, also found natively.
   */
  find(kind: number, name: string): number {
    const key = `${kind} ${name}`;
    let id = this.#found.get(key);
    if (id === undefined) {
      const offset = this.#offsetOf(Buffer.from(name, "latin1"));
      id = offset === undefined ? 0 : this.#named(kind, offset);
      if (id === 0) throw new BtfError(`the kernel's BTF has no ${kindName(kind)} ${name}`);
      this.#found.set(key, id);
    }
    return id;
  }

  /** The offset in the string section of the first whole string `wanted`, if there is one. */
  #offsetOf(wanted: Buffer): number | undefined {
    if (this.#nameIs(0, wanted)) return 0;
    // Bounded by NULs: a whole string, not the tail of a longer one.
    const needle = Buffer.concat([NUL, wanted, NUL]);
    const at = this.#data.indexOf(needle, this.#strings);
    return at < 0 || at + needle.length > this.#stringsEnd ? undefined : at + 1 - this.#strings;
  }

  /** The first id of `kind` whose name is at `offset` of the string section, or 0. */
  #named(kind: number, offset: number): number {
    const words = this.#words;
    // Every record starts with its name's offset; the same word elsewhere (a member's name, a
    // size) is passed over: it starts no record.
    for (let word = words.indexOf(offset); word >= 0; word = words.indexOf(offset, word + 1)) {
      const id = this.#idAt(word);
      if (id !== 0 && (((words[word + 1] as number) >>> 24) & 0x1f) === kind) return id;
    }
    return 0;
  }

  /** The id of the record starting at `word` of the type section, or 0 when none starts there. */
  #idAt(word: number): number {
    const at = this.#at;
    let low = 1;
    let high = at.length - 1;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      const start = at[middle] as number;
      if (start === word) return middle;
      if (start < word) low = middle + 1;
      else high = middle - 1;
    }
    return 0;
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
      current = this.#words[this.#record(current) + 2] as number;
    }
    throw new BtfError(`type ${id}: a typedef chain too long`);
  }

  /** Bytes of a type: ints, structs, unions, enums, pointers (8), arrays (of arrays). */
  size(id: number): number {
    let elements = 1;
    let current = id;
    for (let hops = 0; hops < 64; hops++) {
      const resolved = this.resolve(current);
      const at = this.#record(resolved);
      switch (this.kind(resolved)) {
        case Kind.PTR:
          return 8 * elements;
        case Kind.ARRAY:
          elements *= this.#words[at + 5] as number;
          current = this.#words[at + 3] as number;
          continue;
        case Kind.INT:
        case Kind.STRUCT:
        case Kind.UNION:
        case Kind.ENUM:
        case Kind.ENUM64:
        case Kind.FLOAT:
          return (this.#words[at + 2] as number) * elements;
        default:
          throw new BtfError(`type ${id} (${kindName(this.kind(resolved))}) has no size`);
      }
    }
    throw new BtfError(`type ${id}: arrays nested too deep`);
  }

  /** For a PTR type (after typedefs), the type it points to, resolved. */
  pointee(id: number): number {
    const resolved = this.resolve(id);
    if (this.kind(resolved) !== Kind.PTR) throw new BtfError(`type ${id} is not a pointer`);
    return this.resolve(this.#words[this.#record(resolved) + 2] as number);
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
  #memberIn(
    id: number,
    name: string,
    wanted: Buffer,
    depth = 0,
  ): { offset: number; type: number } | undefined {
    if (depth > 64) throw new BtfError(`type ${id}: anonymous members nested too deep`);
    const resolved = this.resolve(id);
    const kind = this.kind(resolved);
    if (kind !== Kind.STRUCT && kind !== Kind.UNION) return undefined;
    const words = this.#words;
    const at = this.#record(resolved);
    const info = words[at + 1] as number;
    const bitfields = info >>> 31 === 1;
    const vlen = info & 0xffff;
    for (let i = 0; i < vlen; i++) {
      const m = at + 3 + 3 * i;
      const memberName = words[m] as number;
      const type = words[m + 1] as number;
      const raw = words[m + 2] as number;
      const bitOffset = bitfields ? raw & 0xffffff : raw;
      const bitSize = bitfields ? raw >>> 24 : 0;
      if (memberName === 0) {
        const inner = this.#memberIn(type, name, wanted, depth + 1);
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
 * Words after a type's 3-word header, by kind (btf.h: what follows each kind): FIXED words plus
 * PER_VLEN words for each of its vlen entries; a kind absent from FIXED is unknown. Tables, not a
 * switch over Kind's properties: the walk runs over ~126,000 records in a just-started process,
 * and a case first met after V8 optimized it (a rare kind) would throw the optimized code away.
 */
const FIXED = new Int8Array(32).fill(-1);
const PER_VLEN = new Uint8Array(32);
for (const kind of [Kind.INT, Kind.VAR, Kind.DECL_TAG]) FIXED[kind] = 1;
FIXED[Kind.ARRAY] = 3;
for (const kind of [Kind.STRUCT, Kind.UNION, Kind.DATASEC, Kind.ENUM64]) {
  FIXED[kind] = 0;
  PER_VLEN[kind] = 3;
}
for (const kind of [Kind.ENUM, Kind.FUNC_PROTO]) {
  FIXED[kind] = 0;
  PER_VLEN[kind] = 2;
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

/**
 * Where each record of the type section `words` starts (in words), by id: one walk
 * that reads only each record's info word, for its length. `types` (the section's byte offset)
 * only names where a bad record is. BtfError for an unknown kind or a record past the end.
 */
function walk(words: Uint32Array, types: number): Uint32Array {
  // Every record is at least a header long: room for the most there can be.
  const most = 1 + Math.floor(words.length / 3);
  const at = new Uint32Array(most);
  const length = words.length;
  let count = 1;
  let word = 0;
  while (word + 3 <= length) {
    const info = words[word + 1] as number;
    const kind = (info >>> 24) & 0x1f;
    const fixed = FIXED[kind] as number;
    if (fixed < 0) throw new BtfError(`unknown BTF kind ${kind} at byte ${types + 4 * word}`);
    at[count++] = word;
    word += 3 + fixed + (PER_VLEN[kind] as number) * (info & 0xffff);
  }
  if (word !== length) throw new BtfError("a type record runs past the type section");
  return at.subarray(0, count);
}

function kindName(kind: number): string {
  const entry = Object.entries(Kind).find(([, value]) => value === kind);
  return entry ? entry[0].toLowerCase() : `kind ${kind}`;
}
