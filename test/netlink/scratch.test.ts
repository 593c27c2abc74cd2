/** DecodeScratch: what decoders reuse from one message to the next gives the same answers as fresh reads. */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { DecodeScratch } from "../../src/netlink/index.js";

test("cgroupId reads every u64 whatever came before: a few repeated, many distinct, words shared", () => {
  const u64 = fc.bigInt({ min: 0n, max: (1n << 64n) - 1n });
  const ids = fc.oneof(
    fc.array(fc.constantFrom(0n, 1n, (1n << 32n) + 1n, 1n << 32n, 4242n, 1n << 63n, (1n << 64n) - 1n), {
      maxLength: 60,
    }),
    fc.array(u64, { maxLength: 60 }),
  );
  fc.assert(
    fc.property(ids, (values) => {
      const scratch = new DecodeScratch();
      const buf = Buffer.alloc(8 * values.length + 4);
      const view = scratch.view(buf);
      for (const [i, v] of values.entries()) buf.writeBigUInt64LE(v, 4 + 8 * i);
      for (const [i, v] of values.entries()) assert.equal(scratch.cgroupId(view, 4 + 8 * i), v);
    }),
    { numRuns: 300 },
  );
});
