import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  builtinServices,
  type FilterNode,
  FilterSyntaxError,
  type HostCond,
  parseFilter,
  parseServices,
} from "../../src/filter/index.js";

const services = builtinServices;
const parse = (text: string | string[]) => parseFilter(text, { services });

const v4 = (address: string, prefixLength = 32) => ({ family: "inet" as const, address, prefixLength });
const v6 = (address: string, prefixLength = 128) => ({ family: "inet6" as const, address, prefixLength });
const src = (extra: Omit<HostCond, "type" | "side"> = {}): FilterNode => ({
  type: "host",
  side: "src",
  ...extra,
});
const dst = (extra: Omit<HostCond, "type" | "side"> = {}): FilterNode => ({
  type: "host",
  side: "dst",
  ...extra,
});
const sport = (op: "eq" | "ne" | "lt" | "le" | "gt" | "ge", port: number): FilterNode => ({
  type: "port",
  side: "src",
  op,
  port,
});
const and = (left: FilterNode, right: FilterNode): FilterNode => ({ type: "and", left, right });
const or = (left: FilterNode, right: FilterNode): FilterNode => ({ type: "or", left, right });
const not = (operand: FilterNode): FilterNode => ({ type: "not", operand });

function syntaxError(text: string, word: string, position: number, reason?: RegExp) {
  assert.throws(
    () => parse(text),
    (e: unknown) => {
      assert.ok(e instanceof FilterSyntaxError, `not a FilterSyntaxError: ${e}`);
      assert.equal(e.input, text);
      assert.equal(e.word, word);
      assert.equal(e.position, position);
      if (reason) assert.match(e.reason, reason);
      return true;
    },
  );
}

describe("parseFilter: host conditions", () => {
  test("empty filter is no filter", () => {
    assert.equal(parse(""), undefined);
    assert.equal(parse("   \t"), undefined);
    assert.equal(parse([]), undefined);
  });

  test("IPv4 addresses, prefixes and ports", () => {
    assert.deepEqual(parse("src 10.0.0.1"), src({ prefix: v4("10.0.0.1") }));
    assert.deepEqual(parse("dst 10.0.0.0/8"), dst({ prefix: v4("10.0.0.0", 8) }));
    assert.deepEqual(parse("dst 10.0.0.5:53"), dst({ prefix: v4("10.0.0.5"), port: 53 }));
    assert.deepEqual(parse("dst 10.0.0.0/8:53"), dst({ prefix: v4("10.0.0.0", 8), port: 53 }));
    // ss's get_addr_ipv4: missing parts are zero, parts are C numbers.
    assert.deepEqual(parse("src 10"), src({ prefix: v4("10.0.0.0") }));
    assert.deepEqual(parse("src 0x7f.1"), src({ prefix: v4("127.1.0.0") }));
    // Host bits past the prefix are kept, as ss sends them.
    assert.deepEqual(parse("src 10.1.2.3/8"), src({ prefix: v4("10.1.2.3", 8) }));
  });

  test("`src ADDR` and `src ADDR:*` are the same condition (port -1)", () => {
    assert.deepEqual(parse("src 10.0.0.1:*"), parse("src 10.0.0.1"));
    assert.deepEqual(parse("src 10.0.0.1:"), parse("src 10.0.0.1"));
  });

  test("IPv6: bracketed, with port, prefixes", () => {
    assert.deepEqual(parse("src [::1]"), src({ prefix: v6("::1") }));
    assert.deepEqual(parse("src [::1]:22"), src({ prefix: v6("::1"), port: 22 }));
    assert.deepEqual(parse("dst [2001:DB8:0:0::1]:443"), dst({ prefix: v6("2001:db8::1"), port: 443 }));
    assert.deepEqual(parse("dst [2001:db8::/32]:53"), dst({ prefix: v6("2001:db8::", 32), port: 53 }));
    assert.deepEqual(parse("dst 2001:db8::/32"), dst({ prefix: v6("2001:db8::", 32) }));
    assert.deepEqual(parse("src [::ffff:10.0.0.1]"), src({ prefix: v6("::ffff:10.0.0.1") }));
    assert.deepEqual(parse("src [10.0.0.1]:80"), src({ prefix: v4("10.0.0.1"), port: 80 }));
  });

  test("any address: *, *:PORT, :PORT, port names", () => {
    assert.deepEqual(parse("src *"), src());
    assert.deepEqual(parse("src *:*"), src());
    assert.deepEqual(parse("src *:80"), src({ port: 80 }));
    assert.deepEqual(parse("dst :53"), dst({ port: 53 }));
    assert.deepEqual(parse("dst :domain"), dst({ port: 53 }));
    assert.deepEqual(parse("dst :0x35"), dst({ port: 53 }));
    assert.deepEqual(parse("dst [::1]:https"), dst({ prefix: v6("::1"), port: 443 }));
  });

  test("optional = after src/dst", () => {
    for (const eq of ["=", "==", "eq"]) assert.deepEqual(parse(`src ${eq} 10.0.0.1`), parse("src 10.0.0.1"));
  });
});

describe("parseFilter: ports", () => {
  test("every operator and alias", () => {
    const spellings: Array<[string[], "eq" | "ne" | "lt" | "le" | "gt" | "ge"]> = [
      [["=", "==", "eq"], "eq"],
      [["!=", "ne", "neq"], "ne"],
      [["<", "lt"], "lt"],
      [["<=", "le", "leq"], "le"],
      [[">", "gt"], "gt"],
      [[">=", "ge", "geq"], "ge"],
    ];
    for (const [words, op] of spellings)
      for (const w of words) {
        assert.deepEqual(parse(`sport ${w} :1024`), sport(op, 1024), w);
        assert.deepEqual(parse(`dport ${w} 1024`), { type: "port", side: "dst", op, port: 1024 }, w);
      }
  });

  test("`sport :x` is `sport = :x`", () => {
    assert.deepEqual(parse("sport :22"), sport("eq", 22));
    assert.deepEqual(parse("sport 22"), sport("eq", 22));
    assert.deepEqual(parse("sport ssh"), sport("eq", 22));
  });

  test("`sport = *` is ss's any-port condition; ordering against * is refused", () => {
    assert.deepEqual(parse("sport = *"), src());
    assert.deepEqual(parse("dport != :*"), not(dst()));
    syntaxError("sport < *", "*", 8, /needs a port number/);
  });

  test("ambiguous and unknown service names", () => {
    const table = parseServices("odd 10/tcp\nodd 11/udp\nsame 12/tcp\nsame 12/udp\n");
    assert.deepEqual(parseFilter("sport same", { services: table }), sport("eq", 12));
    assert.throws(() => parseFilter("sport odd", { services: table }), /ambiguous port "odd"/);
    syntaxError("dport = :nosuchservice", ":nosuchservice", 8, /does not look like a port/);
  });

  test("port out of range and bad numbers", () => {
    syntaxError("sport = :65536", ":65536", 8, /out of range/);
    syntaxError("dst 1.2.3.4:99999", "1.2.3.4:99999", 4, /out of range/);
    syntaxError("sport = -1", "-1", 8, /not a port number/);
    syntaxError("sport = 08", "08", 8, /not a port number/);
  });
});

describe("parseFilter: dev, fwmark, cgroup, autobound", () => {
  test("dev by name or index, = and !=", () => {
    assert.deepEqual(parse("dev eth0"), { type: "dev", device: "eth0" });
    assert.deepEqual(parse("dev = 3"), { type: "dev", device: "3" });
    assert.deepEqual(parse("dev != lo"), not({ type: "dev", device: "lo" }));
    assert.deepEqual(parse("dev ne lo"), not({ type: "dev", device: "lo" }));
  });

  test("fwmark with and without mask", () => {
    assert.deepEqual(parse("fwmark 0x10/0xff"), { type: "fwmark", mark: 16, mask: 255 });
    assert.deepEqual(parse("fwmark 7"), { type: "fwmark", mark: 7, mask: 0xffffffff });
    assert.deepEqual(parse("fwmark != 1"), not({ type: "fwmark", mark: 1, mask: 0xffffffff }));
    syntaxError("fwmark 0x1/", "0x1/", 7, /MARK\[\/MASK\]/);
    syntaxError("fwmark 0x100000000", "0x100000000", 7);
  });

  test("cgroup path and autobound", () => {
    assert.deepEqual(parse("cgroup /system.slice/a.service"), {
      type: "cgroup",
      path: "/system.slice/a.service",
    });
    assert.deepEqual(parse("cgroup eq /"), { type: "cgroup", path: "/" });
    assert.deepEqual(parse("autobound"), { type: "autobound" });
    assert.deepEqual(parse("not autobound"), not({ type: "autobound" }));
  });

  test("backslash escapes make a literal word", () => {
    assert.deepEqual(parse("dev \\and"), { type: "dev", device: "and" });
    assert.deepEqual(parse("cgroup /a\\ b\\(1\\)"), { type: "cgroup", path: "/a b(1)" });
    syntaxError("dev eth\\", "\\", 7, /backslash/);
  });
});

describe("parseFilter: operators, precedence, parentheses", () => {
  const a = sport("eq", 1);
  const b = sport("eq", 2);
  const c = sport("eq", 3);

  test("and/or/not spellings", () => {
    for (const w of ["and", "&", "&&"]) assert.deepEqual(parse(`sport :1 ${w} sport :2`), and(a, b), w);
    for (const w of ["or", "|", "||"]) assert.deepEqual(parse(`sport :1 ${w} sport :2`), or(a, b), w);
    for (const w of ["not ", "!", "! "]) assert.deepEqual(parse(`${w}sport :1`), not(a), w);
  });

  test("adjacent terms are joined with and", () => {
    assert.deepEqual(parse("sport :1 sport :2"), and(a, b));
  });

  test("left to right, no precedence (as ss 6.1's bytecode shows)", () => {
    assert.deepEqual(parse("sport :1 or sport :2 and sport :3"), and(or(a, b), c));
    assert.deepEqual(parse("sport :1 and sport :2 or sport :3"), or(and(a, b), c));
    assert.deepEqual(parse("sport :1 or sport :2 sport :3"), and(or(a, b), c));
    assert.deepEqual(parse("not sport :1 and sport :2"), and(not(a), b));
    assert.deepEqual(parse("not not sport :1"), not(not(a)));
  });

  test("parentheses group", () => {
    assert.deepEqual(parse("sport :1 or ( sport :2 and sport :3 )"), or(a, and(b, c)));
    assert.deepEqual(parse("not ( sport :1 or sport :2 )"), not(or(a, b)));
    assert.deepEqual(parse("((sport :1))"), a);
  });

  test("with or without blanks around operators and parentheses", () => {
    assert.deepEqual(parse("( sport >= :1024 )"), sport("ge", 1024));
    assert.deepEqual(parse("(sport>=:1024)"), sport("ge", 1024));
    assert.deepEqual(parse("!(sport=:1||sport=:2)&&sport!=:3"), and(not(or(a, b)), sport("ne", 3)));
  });

  test("argv words and one string give the same tree", () => {
    assert.deepEqual(
      parse(["dst", "10.0.0.5:53", "or", "(", "sport", ">", ":1024", ")"]),
      parse("dst 10.0.0.5:53 or (sport > :1024)"),
    );
    assert.deepEqual(
      parse(["dst 10.0.0.5:53", "or sport > :1024"]),
      parse("dst 10.0.0.5:53 or sport > :1024"),
    );
  });

  test("comment lines (ss -F FILE)", () => {
    assert.deepEqual(parse("# web traffic\nsport :1\n#sport :9\n"), a);
  });
});

describe("parseFilter: errors point at the word", () => {
  test("unknown word", () => syntaxError("sport :1 bogus", "bogus", 9, /unknown word "bogus"/));
  test("bad address", () => syntaxError("dst 10.0.0.300", "10.0.0.300", 4, /not an IPv4 address/));
  test("bad IPv6 and the bracket hint", () => syntaxError("src ::1", "::1", 4, /bracket IPv6/));
  test("prefix too long", () => syntaxError("src 10.0.0.0/33", "10.0.0.0/33", 4, /prefix length/));
  test("unclosed bracket", () => syntaxError("src [::1", "[::1", 4, /closing "\]"/));
  test("unclosed parenthesis", () => syntaxError("( sport :1", "(", 0, /no "\)" closes it/));
  test("stray closing parenthesis", () => syntaxError("sport :1 )", ")", 9, /no "\(" before it/));
  test("empty parentheses", () => syntaxError("()", ")", 1, /empty parentheses/));
  test("missing operand at the end", () => syntaxError("sport :1 and", "", 12, /ends where a condition/));
  test("missing value", () => syntaxError("dst", "", 3, /needs an address/));
  test("keyword where a value belongs", () => syntaxError("src dst 1.2.3.4", "dst", 4, /needs an address/));
  test("operator without left operand", () =>
    syntaxError("or sport :1", "or", 0, /needs a condition before it/));
  test("src takes no !=", () => syntaxError("src != 1.2.3.4", "!=", 4, /takes no "!="/));
  test("dev takes no <", () => syntaxError("dev < 2", "<", 4, /"=" or "!="/));

  test("the message quotes the input with a caret line", () => {
    try {
      parse("dst 10.0.0.5:53 and sport = :99999");
      assert.fail("no error");
    } catch (e) {
      assert.ok(e instanceof FilterSyntaxError);
      assert.equal(
        e.message,
        `port 99999 is out of range (0-65535)\n  dst 10.0.0.5:53 and sport = :99999\n                              ^^^^^^`,
      );
    }
  });

  test("nesting is bounded", () => {
    syntaxError(`${"(".repeat(150)}sport :1${")".repeat(150)}`, "(", 100, /nested deeper/);
    assert.throws(() => parse("sport :1 ".repeat(3000)), FilterSyntaxError);
  });
});
