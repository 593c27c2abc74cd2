import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  builtinServices,
  FilterSyntaxError,
  filterFromObject,
  parseFilter,
  type StructuredFilter,
} from "../../src/filter/index.js";

const options = { services: builtinServices };
const same = (obj: StructuredFilter, text: string) =>
  assert.deepStrictEqual(filterFromObject(obj, options), parseFilter(text, options), text);

function fieldError(obj: unknown, input: string, word: string, reason: RegExp) {
  assert.throws(
    () => filterFromObject(obj as StructuredFilter, options),
    (e: unknown) => {
      assert.ok(e instanceof FilterSyntaxError, String(e));
      assert.equal(e.input, input);
      assert.equal(e.word, word);
      assert.equal(e.position, input.indexOf(word));
      assert.match(e.reason, reason);
      return true;
    },
  );
}

describe("filterFromObject", () => {
  test("gives the tree of the equivalent text", () => {
    same({ dst: "10.0.0.5", dport: 53 }, "dst 10.0.0.5 and dport = :53");
    same({ dst: "10.0.0.5:53", sport: { ge: 1024 } }, "dst 10.0.0.5:53 and sport >= :1024");
    same({ src: "[::1]:22" }, "src [::1]:22");
    same({ dport: "domain" }, "dport = :53");
    same({ dport: ":0x35" }, "dport = :53");
    same({ sport: { ge: 1024, lt: 2048 } }, "sport >= :1024 and sport < :2048");
    same({ sport: "*" }, "src *");
    same({ sport: { ne: "*" } }, "not src *");
    same({ dev: "eth0" }, "dev eth0");
    same({ dev: 3 }, "dev 3");
    same({ fwmark: 16 }, "fwmark 0x10");
    same({ fwmark: "0x10/0xff" }, "fwmark 0x10/0xff");
    same({ fwmark: { mark: 16, mask: 255 } }, "fwmark 0x10/0xff");
    same({ cgroup: "/a b" }, "cgroup /a\\ b");
    same({ autobound: true }, "autobound");
    same({ autobound: false }, "not autobound");
    same({ not: { dst: "10.0.0.0/8" } }, "not dst 10.0.0.0/8");
    same({ or: [{ dport: 53 }, { dport: 853 }] }, "dport = :53 or dport = :853");
    same({ and: [{ dport: 53 }, { not: { src: "127.0.0.1" } }] }, "dport = :53 and not src 127.0.0.1");
    same(
      { src: "10/8", dst: "1.2.3.4", sport: 1, dport: 2, dev: "lo", fwmark: 1, cgroup: "/", autobound: true },
      "src 10/8 dst 1.2.3.4 sport :1 dport :2 dev lo fwmark 1 cgroup / autobound",
    );
  });

  test("an empty object is no filter", () => {
    assert.equal(filterFromObject({}, options), undefined);
  });

  test("values are words, never filter text", () => {
    fieldError(
      { dst: "10.0.0.5 or src 1.2.3.4" },
      "dst 10.0.0.5 or src 1.2.3.4",
      "10.0.0.5 or src 1.2.3.4",
      /not an IPv4/,
    );
  });

  test("typed errors name the field as ss text", () => {
    fieldError({ dport: 70000 }, "dport 70000", "70000", /integer from 0 to 65535/);
    fieldError({ dport: ":99999" }, "dport :99999", ":99999", /out of range/);
    fieldError({ dst: "10.0.0.300" }, "dst 10.0.0.300", "10.0.0.300", /not an IPv4 address/);
    fieldError({ sport: { lt: "*" } }, 'sport {"lt":"*"}', '{"lt":"*"}', /needs a port number/);
    fieldError({ sport: { over: 3 } }, 'sport {"over":3}', '{"over":3}', /unknown port comparison/);
    fieldError({ sport: {} }, "sport {}", "{}", /no port comparison/);
    fieldError({ src: 5 }, "src 5", "5", /must be a string/);
    fieldError({ fwmark: -1 }, "fwmark -1", "-1", /32-bit/);
    fieldError({ autobound: "yes" }, "autobound yes", "yes", /true or false/);
    fieldError({ or: [] }, "or []", "[]", /non-empty array/);
    fieldError({ not: {} }, "not {}", "{}", /needs a condition/);
    fieldError({ bogus: 1 }, "bogus", "bogus", /unknown filter field "bogus"/);
    fieldError(null, "filter null", "null", /must be an object/);
  });
});
