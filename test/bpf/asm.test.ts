/** The assembler's encodings, checked against the instruction set's (Documentation/bpf/standardization). */
import assert from "node:assert/strict";
import { test } from "node:test";
import { Assembler, FP } from "../../src/bpf/asm.js";

const hex = (b: Buffer): string[] =>
  Array.from({ length: b.length / 8 }, (_, i) => b.subarray(i * 8, i * 8 + 8).toString("hex"));

test("instructions encode as the spec lays them out", () => {
  const a = new Assembler()
    .movImm(0, 0) // BPF_ALU64 | BPF_MOV | BPF_K = 0xb7
    .mov(6, 1) // 0xbf, src 1 dst 6
    .load(4, 3, 1, 1268) // BPF_LDX | BPF_MEM | BPF_W = 0x61
    .load(8, 7, 6, 24) // 0x79
    .store(2, FP, -32, 3) // BPF_STX | BPF_MEM | BPF_H = 0x6b
    .storeImm(4, FP, -64, 0xffff0000) // BPF_ST | BPF_MEM | BPF_W = 0x62
    .addImm(2, -48) // 0x07
    .call("sock_from_file") // 0x85, imm 162
    .loadMap(1, 5) // 0x18, src BPF_PSEUDO_MAP_FD, then the second half
    .exit(); // 0x95
  assert.deepEqual(hex(a.build()), [
    "b700000000000000",
    "bf16000000000000",
    "6113f40400000000",
    "7967180000000000",
    "6b3ae0ff00000000",
    "620ac0ff0000ffff",
    "07020000d0ffffff",
    "85000000a2000000",
    "1811000005000000",
    "0000000000000000",
    "9500000000000000",
  ]);
});

test("jumps go to their labels, forward and back, relative to the next instruction", () => {
  const a = new Assembler();
  a.label("top")
    .jumpIf(1, "==", 0, "end")
    .jumpIfReg(1, "!=", 2, "top")
    .jump("end")
    .movImm(0, 1)
    .label("end")
    .exit();
  assert.deepEqual(hex(a.build()), [
    "1501030000000000", // if r1 == 0 goto +3
    "5d21feff00000000", // if r1 != r2 goto -2
    "0500010000000000", // goto +1
    "b700000001000000",
    "9500000000000000",
  ]);
});

test("misuse is an AsmError naming it", () => {
  assert.throws(() => new Assembler().jump("nowhere").build(), {
    name: "AsmError",
    message: /undefined label nowhere/,
  });
  assert.throws(() => new Assembler().label("x").label("x"), {
    name: "AsmError",
    message: /label x defined twice/,
  });
  assert.throws(() => new Assembler().load(4, 1, 2, 1 << 16), {
    name: "AsmError",
    message: /offset 65536 out of range/,
  });
  assert.throws(() => new Assembler().movImm(1, 2 ** 33), { name: "AsmError", message: /immediate/ });
});
