import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  builtinServices,
  compileBytecode,
  compilePredicate,
  type OmittableCondition,
  parseFilter,
} from "../../src/filter/index.js";
import { compilableTree, hasAutobound, referenceSocket, TEST_ENV, testFilterEnv } from "./arbitraries.js";
import { auditBytecode, entryOf, runBytecode } from "./kernel-bc.js";
import { referenceMatch } from "./reference.js";

const compile = (text: string, omit: OmittableCondition[] = []) =>
  compileBytecode(parseFilter(text, { services: builtinServices }), { env: testFilterEnv, omit });

const OP_NAMES = ["NOP", "JMP", "S_GE", "S_LE", "D_GE", "D_LE", "AUTO", "S_COND", "D_COND", "DEV", "MARK"];

/** decodeOps splits a program into named fields, one op at a time, skipping hostcond padding. */
function decodeOps(bc: Buffer): string[] {
  const out: string[] = [];
  for (let o = 0; o < bc.length; ) {
    const code = bc[o]!;
    const yes = bc[o + 1]!;
    const at = `@${o} ${OP_NAMES[code] ?? code}`;
    out.push(`${at} code=${code}`, `${at} yes=${yes}`, `${at} no=${bc.readUInt16LE(o + 2)}`);
    if (code === 7 || code === 8) {
      out.push(
        `${at} family=${bc[o + 4]}`,
        `${at} prefix_len=${bc[o + 5]}`,
        `${at} port=${bc.readInt32LE(o + 8)}`,
      );
      out.push(`${at} addr=${bc.subarray(o + 12, o + yes).toString("hex")}`);
    } else if (yes > 4) {
      out.push(`${at} data=${bc.subarray(o + 4, o + yes).toString("hex")}`);
    }
    if (yes === 0) break;
    o += yes;
  }
  return out;
}

/**
 * Programs iproute2 6.1's ss sent on this machine, captured with
 * `strace -e trace=sendmsg -e write=all ss -tn FILTER` (INET_DIAG_REQ_BYTECODE payload).
 */
const SS_GOLDEN: Array<[string, string]> = [
  ["src 10.0.0.1", "0710140002200000ffffffff0a000001"],
  ["src 10.0.0.1:*", "0710140002200000ffffffff0a000001"],
  ["src 10.0.0.0/8", "0710140002080000ffffffff0a000000"],
  ["src 10", "0710140002200000ffffffff0a000000"],
  ["dst :53", "08101400000000003500000000000000"],
  ["src *:80", "07101400000000005000000000000000"],
  ["src [::ffff:10.0.0.1]:80", "071c20000a8000005000000000000000000000000000ffff0a000001"],
  ["src 2001:db8::/32", "071c20000a200000ffffffff20010db8000000000000000000000000"],
  ["sport :1024", "07101400000000000004000000000000"],
  ["sport = :1024", "07101400000000000004000000000000"],
  ["sport > :1024", "03080c000000000401040800"],
  ["sport < :1024", "02080c000000000401040800"],
  ["dport >= :domain", "04080c0000003500"],
  ["dport != :443", "0810140000000000bb0100000000000001040800"],
  ["fwmark 0x10/0xff", "0a0c100010000000ff000000"],
  ["fwmark 7", "0a0c100007000000ffffffff"],
  [
    "sport = :1 or sport = :2 and sport = :3",
    "07101400000000000100000000000000010414000710240000000000020000000000000007101400000000000300000000000000",
  ],
  [
    "sport = :1 and sport = :2 or sport = :3",
    "07102400000000000100000000000000071014000000000002000000000000000104140007101400000000000300000000000000",
  ],
  [
    "not sport = :1 and sport = :2",
    "071014000000000001000000000000000104180007101400000000000200000000000000",
  ],
  [
    "not ( src 10.0.0.1 or dst 10.0.0.2 )",
    "0710140002200000ffffffff0a000001010414000810140002200000ffffffff0a00000201040800",
  ],
  [
    "dst [::1]:22 and not sport < :1024",
    "081c30000a800000160000000000000000000000000000000000000102080c00000000040104080001040800",
  ],
  [
    "dport <= 80 or dport ge 8080 and src 192.168.0.0/16",
    "05080c000000500001040c0004081c000000901f0710140002100000ffffffffc0a80000",
  ],
];

/** A separate little builder for expected bytes (never the production writer). */
const bcOp = (code: number, yes: number, no: number) => Buffer.from([code, yes, no & 0xff, no >> 8]);
const le32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};

describe("compileBytecode: golden bytes", () => {
  for (const [filter, hex] of SS_GOLDEN)
    test(`as ss sends it: ${filter}`, () => {
      const ours = compile(filter);
      assert.ok(ours, "no program");
      assert.deepEqual(decodeOps(ours), decodeOps(Buffer.from(hex, "hex")));
    });

  test("dev: DEV_COND with the ifindex (ss sends no program for dev)", () => {
    assert.deepEqual(compile("dev eth0"), Buffer.concat([bcOp(9, 8, 12), le32(2)]));
    assert.deepEqual(compile("dev != 7"), Buffer.concat([bcOp(9, 8, 12), le32(7), bcOp(1, 4, 8)]));
  });

  test("cgroup: CGROUP_COND with the u64 id, host order", () => {
    const id = Buffer.alloc(8);
    id.writeBigUInt64LE(42n);
    assert.deepEqual(compile("cgroup /a"), Buffer.concat([bcOp(13, 12, 16), id]));
  });

  test("autobound: AUTO and the ephemeral range (ss sends AUTO alone and range-checks in user space)", () => {
    const range = Buffer.concat([bcOp(2, 8, 20), bcOp(0, 0, 32768), bcOp(3, 8, 12), bcOp(0, 0, 60999)]);
    assert.deepEqual(compile("autobound"), Buffer.concat([bcOp(6, 4, 24), range]));
  });

  test("no filter, or nothing left to send: no program", () => {
    assert.equal(compileBytecode(undefined), undefined);
    assert.equal(compile("dev lo", ["dev"]), undefined);
    assert.equal(compile("not fwmark 1 or dev lo", ["dev"]), undefined);
  });
});

describe("compileBytecode: against the kernel's audit and interpreter", () => {
  test("random trees: accepted, and exactly the reference meaning", () => {
    fc.assert(
      fc.property(
        compilableTree,
        fc.array(referenceSocket, { minLength: 1, maxLength: 20 }),
        (tree, sockets) => {
          const bc = compileBytecode(tree, { env: testFilterEnv });
          assert.ok(bc, "no program");
          assert.equal(auditBytecode(bc), 0);
          for (const r of sockets)
            assert.equal(runBytecode(bc, entryOf(r.socket, r.portLocked)), referenceMatch(tree, r, TEST_ENV));
        },
      ),
      { numRuns: 1500 },
    );
  });

  test("random trees with conditions omitted: no program or a superset", () => {
    const omit = fc.subarray<OmittableCondition>(["dev", "fwmark", "cgroup", "autobound"], { minLength: 1 });
    fc.assert(
      fc.property(
        compilableTree,
        omit,
        fc.array(referenceSocket, { maxLength: 20 }),
        (tree, omitted, sockets) => {
          const bc = compileBytecode(tree, { env: testFilterEnv, omit: omitted });
          if (bc) assert.equal(auditBytecode(bc, !omitted.includes("fwmark")), 0);
          for (const r of sockets)
            if (referenceMatch(tree, r, TEST_ENV) && bc)
              assert.ok(runBytecode(bc, entryOf(r.socket, r.portLocked)));
        },
      ),
      { numRuns: 1000 },
    );
  });

  test("program and predicate together give the reference meaning; the predicate alone is exact without autobound", () => {
    fc.assert(
      fc.property(
        compilableTree,
        fc.array(referenceSocket, { minLength: 1, maxLength: 20 }),
        (tree, sockets) => {
          const bc = compileBytecode(tree, { env: testFilterEnv })!;
          const predicate = compilePredicate(tree, testFilterEnv);
          const exact = !hasAutobound(tree);
          for (const r of sockets) {
            const want = referenceMatch(tree, r, TEST_ENV);
            const p = predicate(r.socket);
            if (exact) assert.equal(p, want);
            else if (want) assert.ok(p, "predicate rejected a matching socket");
            assert.equal(runBytecode(bc, entryOf(r.socket, r.portLocked)) && p, want);
          }
        },
      ),
      { numRuns: 1500 },
    );
  });

  test("the audit model refuses what the kernel refuses", () => {
    const cond = compile("sport = :1")!; // S_COND yes=16 no=20
    assert.equal(auditBytecode(cond), 0);
    assert.equal(auditBytecode(Buffer.alloc(0)), "EINVAL");
    const badNo = Buffer.from(cond);
    badNo.writeUInt16LE(18, 2); // not a multiple of 4
    assert.equal(auditBytecode(badNo), "EINVAL");
    const offChain = Buffer.concat([bcOp(2, 8, 12), bcOp(0, 0, 5), bcOp(1, 4, 8)]);
    offChain.writeUInt16LE(4, 2); // `no` lands inside the S_GE's port op, not on the yes chain
    assert.equal(auditBytecode(offChain), "EINVAL");
    assert.equal(auditBytecode(compile("fwmark 1")!, false), "EPERM");
    assert.equal(auditBytecode(Buffer.concat([bcOp(6, 4, 12)])), "EINVAL"); // beyond len + 4
  });
});

/** ssProgram captures the bytecode ss sends for a filter, or undefined when strace or ss is missing. */
function ssProgram(filter: string): Buffer | undefined {
  const run = spawnSync("strace", ["-e", "trace=sendmsg", "-e", "write=all", "ss", "-tn", filter], {
    encoding: "utf8",
    stdio: ["ignore", "ignore", "pipe"],
  });
  if (run.error || run.status !== 0) return undefined;
  const trace = run.stderr;
  // First sendmsg: buffer 0 is nlmsghdr + inet_diag_req_v2, 1 the nlattr header, 2 the program.
  const first = trace.split(/\n(?=sendmsg)/)[0] ?? "";
  const block = /\* \d+ bytes in buffer 2\n((?: \| .*\n?)+)/.exec(first);
  if (!block) return Buffer.alloc(0);
  // " | 00000  07 10 14 00 02 20 00 00  ff ff ff ff 0a 00 00 01  ascii |": hex in columns 10-58.
  const hex = block[1]!.split("\n").map((l) => (l.slice(10, 58).match(/[0-9a-f]{2}/g) ?? []).join(""));
  return Buffer.from(hex.join(""), "hex");
}

describe("compileBytecode: live comparison with this machine's ss", () => {
  const probe = (() => {
    try {
      execFileSync("strace", ["-V"], { stdio: "ignore" });
      execFileSync("ss", ["-V"], { stdio: "ignore" });
      return true;
    } catch {
      return false;
    }
  })();
  const filters = [
    ...SS_GOLDEN.map(([f]) => f),
    "not not dst 10.1.2.3/24:80",
    "! ( sport < :5 || dport >= :6 )",
  ];
  for (const filter of filters)
    test(`same program as ss: ${filter}`, { skip: probe ? false : "strace or ss is not installed" }, () => {
      const theirs = ssProgram(filter);
      assert.ok(theirs && theirs.length > 0, "captured no program from ss");
      assert.deepEqual(decodeOps(compile(filter)!), decodeOps(theirs));
    });
});
