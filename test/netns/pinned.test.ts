import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, writeFileSync } from "node:fs";
import { after, before, describe, test } from "node:test";
import {
  add,
  create,
  current,
  fromName,
  NETNS_RUN_DIR,
  NetnsExistsError,
  NetnsNotFoundError,
  remove,
  runIn,
} from "../../src/netns/index.js";
import { cleanupLeftovers, netnsName } from "../kit/netns.js";
import { linkOf, loFlags, mountsUnder, rootOnly, stayHome, threadNetns } from "./helpers.js";

function ip(...args: string[]): string {
  return execFileSync("ip", args, { encoding: "utf8" });
}

function ipNetnsList(): string[] {
  return ip("netns", "list")
    .split("\n")
    .map((line) => line.split(" ")[0] ?? "")
    .filter(Boolean);
}

describe("create()", { skip: rootOnly() }, () => {
  stayHome();

  test("makes a namespace distinct from the current one, with lo down", () => {
    using here = current();
    using ns = create();
    assert.ok(!ns.equals(here));
    assert.equal(runIn(ns, threadNetns), linkOf(ns));
    assert.ok(!loFlags(ns).includes("UP"), "a new namespace's lo is down");
  });

  test("brings lo up when asked", () => {
    using ns = create({ loopbackUp: true });
    assert.ok(loFlags(ns).includes("UP"));
    using other = create({ loopbackUp: true });
    assert.ok(!other.equals(ns));
  });

  test("each call makes a new namespace, which lives as long as its handle", () => {
    const a = create();
    const b = create();
    try {
      assert.ok(!a.equals(b));
    } finally {
      a.close();
      b.close();
    }
  });
});

describe("add() and remove(), interoperable with ip netns", { skip: rootOnly() }, () => {
  stayHome();
  const made: string[] = [];
  const name = (label: string): string => {
    const n = netnsName(`nsl-${label}`);
    made.push(n);
    return n;
  };

  before(() => cleanupLeftovers());
  after(() => {
    for (const n of made) if (existsSync(`${NETNS_RUN_DIR}/${n}`)) execFileSync("ip", ["netns", "del", n]);
  });

  test("ip netns sees what add() made, and ip netns del removes it", () => {
    const n = name("add");
    using ns = add(n, { loopbackUp: true });
    assert.equal(ns.name, n);
    assert.equal(ns.path, `${NETNS_RUN_DIR}/${n}`);
    assert.ok(ipNetnsList().includes(n));
    assert.match(ip("-n", n, "-br", "link", "show", "lo"), /\bUP\b/, "lo up, seen through the pin by ip");
    assert.equal(mountsUnder(ns.path).length, 1, "pinned by exactly one bind mount");
    using again = fromName(n);
    assert.ok(again.equals(ns));

    ip("netns", "del", n);
    assert.ok(!ipNetnsList().includes(n));
    assert.throws(() => fromName(n), NetnsNotFoundError);
    assert.equal(runIn(ns, threadNetns), linkOf(ns), "the handle still holds the namespace");
  });

  test("remove() removes what ip netns add made", () => {
    const n = name("ipadd");
    ip("netns", "add", n);
    using ns = fromName(n);
    remove(n);
    assert.ok(!ipNetnsList().includes(n));
    assert.equal(existsSync(`${NETNS_RUN_DIR}/${n}`), false);
    assert.deepEqual(mountsUnder(`${NETNS_RUN_DIR}/${n}`), []);
    assert.equal(ns.closed, false);
  });

  test("add() then remove() leaves nothing behind", () => {
    const n = name("roundtrip");
    add(n).close();
    remove(n);
    assert.equal(existsSync(`${NETNS_RUN_DIR}/${n}`), false);
    assert.deepEqual(mountsUnder(`${NETNS_RUN_DIR}/${n}`), []);
    assert.throws(() => remove(n), NetnsNotFoundError);
  });

  test("add() of an existing name fails half way without harming the existing pin", () => {
    const n = name("exists");
    using first = add(n);
    assert.throws(
      () => add(n),
      (err: unknown) => err instanceof NetnsExistsError && err.netns === n,
    );
    using still = fromName(n);
    assert.ok(still.equals(first));
    remove(n);
  });

  test("remove() deletes an unmounted leftover file (a half-done ip netns add)", () => {
    const n = name("leftover");
    add(n).close();
    remove(n);
    writeFileSync(`${NETNS_RUN_DIR}/${n}`, "");
    remove(n);
    assert.equal(existsSync(`${NETNS_RUN_DIR}/${n}`), false);
  });
});
