/**
 * Property tests: whatever the input, parsing and structured conversion end in a tree or a
 * FilterSyntaxError — never another error, a crash or a hang.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import {
  builtinServices,
  FilterSyntaxError,
  filterFromObject,
  formatFilter,
  parseFilter,
  type StructuredFilter,
} from "../../src/filter/index.js";

const options = { services: builtinServices };

function onlySyntaxErrors(run: () => unknown): void {
  try {
    run();
  } catch (e) {
    if (!(e instanceof FilterSyntaxError)) throw e;
    assert.ok(e.position >= 0 && e.position <= e.input.length, `position ${e.position} outside the input`);
    assert.ok(e.input.startsWith(e.word, e.position), "word is not at position");
  }
}

const WORDS = [
  ...["src", "dst", "sport", "dport", "dev", "fwmark", "cgroup", "autobound"],
  ...["and", "or", "not", "&", "&&", "|", "||", "!", "(", ")", "=", "==", "!=", "<", "<=", ">", ">="],
  ...["eq", "ne", "neq", "lt", "le", "leq", "gt", "ge", "geq"],
  ...["10.0.0.1", "10/8", "[::1]", "[::1]:22", "::1", "*", "*:80", ":53", ":domain", ":99999", "0x10/0xff"],
  ...["[", "]", ":", "/", "\\", "#", "lo", "eth0", "-1", "08", "1.2.3.4.5", "[2001:db8::/32]:53", "\n"],
];

describe("parser robustness", () => {
  test("random strings: a tree or a FilterSyntaxError", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 80 }), (text) => onlySyntaxErrors(() => parseFilter(text, options))),
      { numRuns: 3000 },
    );
  });

  test("random full-unicode strings", () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 40, unit: "binary" }), (text) =>
        onlySyntaxErrors(() => parseFilter(text, options)),
      ),
      { numRuns: 1000 },
    );
  });

  test("token soups, with and without blanks", () => {
    const soup = fc.record({
      words: fc.array(fc.constantFrom(...WORDS), { maxLength: 25 }),
      sep: fc.constantFrom(" ", "", "\t"),
    });
    fc.assert(
      fc.property(soup, ({ words, sep }) =>
        onlySyntaxErrors(() => {
          const tree = parseFilter(words.join(sep), options);
          // Whatever parses must survive its own round trip.
          assert.deepStrictEqual(parseFilter(formatFilter(tree), options), tree);
        }),
      ),
      { numRuns: 5000 },
    );
  });

  test("argv arrays of random words", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.constantFrom(...WORDS), fc.string({ maxLength: 6 })), { maxLength: 12 }),
        (argv) => onlySyntaxErrors(() => parseFilter(argv, options)),
      ),
      { numRuns: 2000 },
    );
  });

  test("long inputs end quickly", () => {
    onlySyntaxErrors(() => parseFilter("(".repeat(100000), options));
    onlySyntaxErrors(() => parseFilter("not ".repeat(100000), options));
    onlySyntaxErrors(() => parseFilter("sport :1 and ".repeat(20000), options));
    onlySyntaxErrors(() => parseFilter("\\".repeat(100001), options));
  });

  test("random objects: a tree or a FilterSyntaxError", () => {
    const value = fc.oneof(
      fc.constantFrom("10.0.0.1", "[::1]:22", ":53", "*", "x", "", "0x1/0xff", "/"),
      fc.integer({ min: -5, max: 70000 }),
      fc.boolean(),
      fc.constant(null),
      fc.dictionary(
        fc.constantFrom("eq", "ge", "lt", "mark", "mask", "bogus"),
        fc.integer({ min: -1, max: 70000 }),
      ),
    );
    const keys = fc.constantFrom(
      "src",
      "dst",
      "sport",
      "dport",
      "dev",
      "fwmark",
      "cgroup",
      "autobound",
      "bogus",
    );
    const { obj } = fc.letrec<{ obj: Record<string, unknown> }>((tie) => ({
      obj: fc.oneof(
        { depthSize: "small" },
        fc.dictionary(keys, value, { maxKeys: 4 }),
        fc.record({ not: tie("obj") }),
        fc.record({ or: fc.array(tie("obj"), { maxLength: 3 }) }),
        fc.record({ and: fc.oneof(fc.array(tie("obj"), { maxLength: 3 }), value) }),
      ),
    }));
    fc.assert(
      fc.property(obj, (o) => onlySyntaxErrors(() => filterFromObject(o as StructuredFilter, options))),
      { numRuns: 3000 },
    );
  });
});
