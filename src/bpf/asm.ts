/**
 * A small eBPF assembler (Documentation/bpf/standardization/instruction-set.rst): the
 * instructions a tracing program needs, jumps by label, helpers by name. `build()` resolves the
 * labels and gives the 8-byte instructions, little-endian.
 */
import { AsmError } from "./errors.js";

export type Reg = 0 | 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 | 9 | 10;
export const FP: Reg = 10;

/** Access widths in bytes. */
export type Width = 1 | 2 | 4 | 8;

// Classes, widths, modes, operations and sources (include/uapi/linux/bpf_common.h, bpf.h).
const LD = 0x00;
const LDX = 0x01;
const ST = 0x02;
const STX = 0x03;
const JMP = 0x05;
const ALU64 = 0x07;
const SIZE: Record<Width, number> = { 4: 0x00, 2: 0x08, 1: 0x10, 8: 0x18 };
const IMM = 0x00;
const MEM = 0x60;
const K = 0x00;
const X = 0x08;
const ADD = 0x00;
const MOV = 0xb0;
const JA = 0x00;
const CALL = 0x80;
const EXIT = 0x90;
const BPF_PSEUDO_MAP_FD = 1;

/** Conditional jumps by their assembler names (64-bit compares). */
const CONDITIONS = {
  "==": 0x10,
  ">": 0x20,
  ">=": 0x30,
  "!=": 0x50,
  "s>": 0x60,
  "s>=": 0x70,
  "<": 0xa0,
  "<=": 0xb0,
} as const;
export type Condition = keyof typeof CONDITIONS;

/** Helper function ids (enum bpf_func_id, include/uapi/linux/bpf.h). */
export const Helper = {
  map_lookup_elem: 1,
  seq_write: 127,
  sock_from_file: 162,
} as const;
export type HelperName = keyof typeof Helper;

interface Insn {
  code: number;
  dst: number;
  src: number;
  off: number;
  imm: number;
  /** A jump's target, resolved by build(). */
  label?: string;
}

export class Assembler {
  readonly #insns: Insn[] = [];
  readonly #labels = new Map<string, number>();

  /** How many instructions so far (an ld_imm64 counts two). */
  get length(): number {
    return this.#insns.length;
  }

  #emit(code: number, dst: number, src: number, off: number, imm: number, label?: string): this {
    if (!Number.isInteger(off) || off < -0x8000 || off > 0x7fff)
      throw new AsmError(`offset ${off} out of range`);
    if (!Number.isInteger(imm) || imm < -0x80000000 || imm > 0xffffffff)
      throw new AsmError(`immediate ${imm} out of range`);
    this.#insns.push({ code, dst, src, off, imm: imm | 0, ...(label === undefined ? {} : { label }) });
    return this;
  }

  /** Marks the next instruction as `name`. */
  label(name: string): this {
    if (this.#labels.has(name)) throw new AsmError(`label ${name} defined twice`);
    this.#labels.set(name, this.#insns.length);
    return this;
  }

  /** dst = src (64-bit). */
  mov(dst: Reg, src: Reg): this {
    return this.#emit(ALU64 | MOV | X, dst, src, 0, 0);
  }

  /** dst = imm (sign-extended to 64 bits). */
  movImm(dst: Reg, imm: number): this {
    return this.#emit(ALU64 | MOV | K, dst, 0, 0, imm);
  }

  /** dst += imm (64-bit). */
  addImm(dst: Reg, imm: number): this {
    return this.#emit(ALU64 | ADD | K, dst, 0, 0, imm);
  }

  /** dst = *(width *)(src + off). */
  load(width: Width, dst: Reg, src: Reg, off: number): this {
    return this.#emit(LDX | MEM | SIZE[width], dst, src, off, 0);
  }

  /** *(width *)(dst + off) = src. */
  store(width: Width, dst: Reg, off: number, src: Reg): this {
    return this.#emit(STX | MEM | SIZE[width], dst, src, off, 0);
  }

  /** *(width *)(dst + off) = imm. */
  storeImm(width: Width, dst: Reg, off: number, imm: number): this {
    return this.#emit(ST | MEM | SIZE[width], dst, 0, off, imm);
  }

  /** dst = the map open on `fd` (ld_imm64 with BPF_PSEUDO_MAP_FD: two instruction slots). */
  loadMap(dst: Reg, fd: number): this {
    this.#emit(LD | IMM | SIZE[8], dst, BPF_PSEUDO_MAP_FD, 0, fd);
    return this.#emit(0, 0, 0, 0, 0);
  }

  /** if (dst <cond> imm) goto label. */
  jumpIf(dst: Reg, cond: Condition, imm: number, label: string): this {
    return this.#emit(JMP | CONDITIONS[cond] | K, dst, 0, 0, imm, label);
  }

  /** if (dst <cond> src) goto label. */
  jumpIfReg(dst: Reg, cond: Condition, src: Reg, label: string): this {
    return this.#emit(JMP | CONDITIONS[cond] | X, dst, src, 0, 0, label);
  }

  /** goto label. */
  jump(label: string): this {
    return this.#emit(JMP | JA, 0, 0, 0, 0, label);
  }

  /** r0 = helper(r1, ..., r5). */
  call(helper: HelperName): this {
    return this.#emit(JMP | CALL, 0, 0, 0, Helper[helper]);
  }

  exit(): this {
    return this.#emit(JMP | EXIT, 0, 0, 0, 0);
  }

  /** The program: 8 bytes an instruction, labels resolved to relative offsets. */
  build(): Buffer {
    const out = Buffer.alloc(this.#insns.length * 8);
    this.#insns.forEach((insn, index) => {
      let off = insn.off;
      if (insn.label !== undefined) {
        const target = this.#labels.get(insn.label);
        if (target === undefined) throw new AsmError(`jump to undefined label ${insn.label}`);
        off = target - index - 1;
        if (off < -0x8000 || off > 0x7fff) throw new AsmError(`jump to ${insn.label} out of range`);
      }
      const at = index * 8;
      out[at] = insn.code;
      out[at + 1] = (insn.src << 4) | insn.dst;
      out.writeInt16LE(off, at + 2);
      out.writeInt32LE(insn.imm, at + 4);
    });
    return out;
  }
}
