import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { builtinServices, formatFilter, parseFilter } from "../../src/filter/index.js";
import { anyTree } from "./arbitraries.js";

const parse = (text: string) => parseFilter(text, { services: builtinServices });

describe("formatFilter", () => {
  test("renders canonical ss text", () => {
    const cases: Array<[string, string]> = [
      ["dst 10.0.0.5:53", "dst 10.0.0.5:53"],
      ["src 10.0.0.0/8", "src 10.0.0.0/8"],
      ["src 10.0.0.1/32:*", "src 10.0.0.1"],
      ["dst [2001:db8:0::1]:443", "dst [2001:db8::1]:443"],
      ["dst 2001:db8::/32", "dst [2001:db8::/32]"],
      ["src *", "src *"],
      ["dst :domain", "dst :53"],
      ["sport ge 1024", "sport >= :1024"],
      ["dport lt :80", "dport < :80"],
      ["dev = eth0", "dev eth0"],
      ["dev != eth0", "not dev eth0"],
      ["fwmark 16/255", "fwmark 0x10/0xff"],
      ["fwmark 1", "fwmark 0x1"],
      ["cgroup /a\\ b", "cgroup /a\\ b"],
      ["dev \\or", "dev \\or"],
      ["autobound", "autobound"],
      ["sport :1 or sport :2 and sport :3", "(sport = :1 or sport = :2) and sport = :3"],
      ["sport :1 or (sport :2 and sport :3)", "sport = :1 or (sport = :2 and sport = :3)"],
      ["sport :1 and sport :2 and sport :3", "sport = :1 and sport = :2 and sport = :3"],
      ["!(sport :1 || sport :2)", "not (sport = :1 or sport = :2)"],
    ];
    for (const [input, text] of cases) assert.equal(formatFilter(parse(input)), text, input);
  });

  test("no filter is empty text", () => {
    assert.equal(formatFilter(undefined), "");
  });

  test("round trip: parse(format(tree)) deep-equals tree, for random trees", () => {
    fc.assert(
      fc.property(anyTree, (tree) => {
        assert.deepStrictEqual(parse(formatFilter(tree)), tree);
      }),
      { numRuns: 2000 },
    );
  });

  test("round trip from text: format(parse(text)) is a fixed point", () => {
    for (const text of [
      "src 10/8 dst [::1]:22",
      "not not (autobound or dev 3) fwmark 0x1/0x1",
      "sport != :ssh",
    ]) {
      const once = formatFilter(parse(text));
      assert.equal(formatFilter(parse(once)), once);
    }
  });
});
