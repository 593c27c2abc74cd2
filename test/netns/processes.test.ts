/**
 * locateNetns and netnsProcesses over a procfs of the test's own (namespace files are plain files:
 * hard links share their (dev, inode) as the paths of one namespace do), and netnsProcesses over
 * the real /proc.
 */
import assert from "node:assert/strict";
import { linkSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import {
  HOST_NETNS_NAME,
  locateNetns,
  NetnsError,
  type NetnsIdentity,
  netnsProcesses,
} from "../../src/netns/index.js";

/** A temp tree: namespace files in nsfs/, a procfs in proc/, pin directories pins-*. */
function fakeTree(): { root: string; id: (ns: string) => NetnsIdentity } {
  const root = mkdtempSync(join(tmpdir(), "sdt-procfs-"));
  mkdirSync(join(root, "nsfs"));
  for (const ns of ["host", "a", "b"]) writeFileSync(join(root, "nsfs", ns), "");
  const netIn = (entry: string, ns: string) => {
    mkdirSync(join(root, "proc", entry, "ns"), { recursive: true });
    linkSync(join(root, "nsfs", ns), join(root, "proc", entry, "ns", "net"));
  };
  netIn("self", "host");
  netIn("1", "host");
  netIn("10", "a");
  netIn("11", "a");
  netIn("20", "b");
  netIn("x7", "a"); // not a process
  mkdirSync(join(root, "proc", "30")); // exited: its ns/ is gone
  mkdirSync(join(root, "proc", "40", "ns"), { recursive: true });
  symlinkSync("net", join(root, "proc", "40", "ns", "net")); // ELOOP: cannot be looked at
  mkdirSync(join(root, "pins-1", "blue"), { recursive: true }); // a directory: no pin
  mkdirSync(join(root, "pins-2"));
  linkSync(join(root, "nsfs", "a"), join(root, "pins-1", "red"));
  linkSync(join(root, "nsfs", "b"), join(root, "pins-2", "red"));
  linkSync(join(root, "nsfs", "b"), join(root, "pins-2", "blue"));
  const id = (ns: string) => {
    const st = statSync(join(root, "nsfs", ns));
    return { dev: st.dev, ino: st.ino };
  };
  return { root, id };
}

describe("locateNetns and netnsProcesses on a procfs of the test's own", () => {
  let tree: ReturnType<typeof fakeTree>;
  before(() => {
    tree = fakeTree();
  });
  after(() => rmSync(tree.root, { recursive: true, force: true }));
  const options = () => ({
    procRoot: join(tree.root, "proc"),
    netnsDirs: [join(tree.root, "missing"), join(tree.root, "pins-1"), join(tree.root, "pins-2")],
  });

  test("a pinned name is the first regular file of that name in the directories, in order", async () => {
    const { root, id } = tree;
    assert.deepEqual(await locateNetns("red", options()), { ...id("a"), path: join(root, "pins-1", "red") });
    assert.deepEqual(await locateNetns("blue", options()), {
      ...id("b"),
      path: join(root, "pins-2", "blue"),
    });
    assert.equal(await locateNetns("green", options()), undefined);
  });

  test('"pid:N", "(host)", "net:[INO]" and a path', async () => {
    const { root, id } = tree;
    const proc = join(root, "proc");
    assert.deepEqual(await locateNetns("pid:20", options()), {
      ...id("b"),
      path: join(proc, "20", "ns", "net"),
    });
    assert.deepEqual(await locateNetns(HOST_NETNS_NAME, options()), {
      ...id("host"),
      path: join(proc, "self", "ns", "net"),
    });
    assert.deepEqual(await locateNetns("net:[4026]", options()), {
      dev: id("host").dev,
      ino: 4026,
      path: undefined,
    });
    const pin = join(root, "pins-2", "red");
    assert.deepEqual(await locateNetns(pin, options()), { ...id("b"), path: pin });
  });

  test("a process that exited leads nowhere; one that cannot be looked at is a NetnsError", async () => {
    assert.equal(await locateNetns("pid:30", options()), undefined);
    assert.equal(await locateNetns("pid:999", options()), undefined);
    await assert.rejects(locateNetns("pid:40", options()), (e: NetnsError) => {
      assert.ok(e instanceof NetnsError);
      assert.equal(e.netns, "pid:40");
      assert.equal(e.cause?.code, "ELOOP");
      return true;
    });
  });

  test("one pass finds each namespace's processes; the exited are passed over, the unreadable counted", async () => {
    const { id } = tree;
    const unknown = { dev: id("a").dev, ino: 1 };
    const scan = await netnsProcesses([id("a"), id("b"), id("host"), unknown], options());
    assert.deepEqual(scan, { pids: [[10, 11], [20], [1], []], unreadable: 1 });
  });

  test("a namespace asked twice is told twice", async () => {
    const { id } = tree;
    const scan = await netnsProcesses([id("a"), id("b"), id("a")], options());
    assert.deepEqual(scan.pids, [[10, 11], [20], [10, 11]]);
  });

  test("nothing asked: /proc is not even listed; /proc not listable: a NetnsError", async () => {
    assert.deepEqual(await netnsProcesses([], { procRoot: join(tree.root, "missing") }), {
      pids: [],
      unreadable: 0,
    });
    await assert.rejects(
      netnsProcesses([tree.id("a")], { procRoot: join(tree.root, "missing") }),
      NetnsError,
    );
  });
});

test("netnsProcesses over the real /proc finds this process in its namespace", async () => {
  const st = statSync("/proc/self/ns/net");
  const scan = await netnsProcesses([{ dev: st.dev, ino: st.ino }]);
  assert.ok(scan.pids[0]!.includes(process.pid));
});
