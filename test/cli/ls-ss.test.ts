import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  cleanupLeftovers,
  columnDefaults,
  describeAsRoot,
  parseSs,
  runSs,
  type SsRecord,
} from "../kit/index.js";
import { assertAllListed, keyOf, type ListScene, startScene } from "../sockets/list-scene.js";
import { type JsonSocket, sockdiagJson } from "./cli.js";

/** The netids ss prints for the tables sockdiag lists (ss also dumps netlink, packet, ... sockets). */
const LISTED_NETIDS = new Set(["tcp", "udp", "raw", "sctp", "mptcp", "u_str", "u_dgr", "u_seq"]);

/** The Netid ss prints for a socket sockdiag listed (packet and netlink: test/cli/ls-families.test.ts). */
function netidOf(s: JsonSocket): string {
  if (s.family === "netlink") return "nl";
  if (s.family === "packet") return s.type === "raw" ? "p_raw" : "p_dgr";
  if (s.family !== "unix") return s.protocol;
  return { stream: "u_str", dgram: "u_dgr", seqpacket: "u_seq" }[s.type ?? "stream"] ?? "?";
}

/** keyOf for an ss row: inet rows by netid, cookie and inode; unix rows by inode. */
function ssKey(r: SsRecord): string {
  if (r.family === "unix") return `unix:${r.inode}`;
  assert.ok(r.cookie !== undefined, `ss printed no sk: cookie: ${JSON.stringify(r)}`);
  return `${r.netid}:${r.cookie}:${r.inode}`;
}

/**
 * The flag sets compared: each runs as `sockdiag ls -N NAME FLAGS -j` and `ss -N NAME -H -n -e FLAGS`.
 * `{PORT}` is replaced with the port of the scene's IPv4 TCP listener, `{NEXT}` with the port after it
 * (so that `sport < :{NEXT}` selects at least the listener, whatever ports the kernel picked).
 */
const FLAG_SETS: readonly (readonly string[])[] = [
  [],
  ["-a"],
  ["-l"],
  ["-t"],
  ["-u"],
  ["-ta"],
  ["-ua"],
  ["-tl"],
  ["-ul"],
  ["-tua"],
  ["-x"],
  ["-xa"],
  ["-xl"],
  ["-4"],
  ["-4a"],
  ["-6"],
  ["-6a"],
  ["-t", "-6", "-a"],
  ["-u", "-4", "-a"],
  ["-M"],
  ["-Ma"],
  ["-Ml"],
  ["-a", "state", "established"],
  ["-t", "state", "listening"],
  ["-xa", "state", "listening"],
  ["-tua", "state", "connected"],
  ["-ta", "exclude", "listening"],
  ["-xa", "exclude", "listening"],
  ["-a", "exclude", "established"],
  ["-t", "state", "established", "state", "listening"],
  ["-ua", "state", "unconnected"],
  // ss's order of -a/-l and the words: the first `exclude` starts from every state, whatever -a or
  // -l said; the first `state` from none; the last of -a/-l wins; an empty result is the default.
  ["-t", "exclude", "established"],
  ["-u", "exclude", "established"],
  ["-x", "exclude", "established"],
  ["exclude", "established"],
  ["-l", "exclude", "established"],
  ["-tl", "exclude", "listening"],
  ["-tl", "state", "established"],
  ["-t", "exclude", "listening", "state", "listening"],
  ["-ta", "state", "listening", "exclude", "listening"],
  ["-t", "state", "all", "exclude", "all"],
  ["-la"],
  ["-al"],
  ["-l", "-t", "-a"],
  ["-ta", "sport", "=", ":{PORT}"],
  ["-ta", "dport", "=", ":{PORT}", "or", "sport", "=", ":{PORT}"],
  ["-ta", "dport", ">=", ":{PORT}"],
  ["-tua", "sport", "<", ":{NEXT}"],
  ["-ta", "(", "sport", "=", ":{PORT}", "or", "dport", "=", ":{PORT}", ")", "and", "dst", "127.0.0.1"],
  ["-ua", "dst", "127.0.0.1"],
  ["-ua", "dst", "127.0.0.0/8"],
  ["-ta", "src", "[::ffff:127.0.0.1]"],
  ["-ua", "src", "[::1]"],
  ["-tua", "not", "dst", "127.0.0.1"],
];

describeAsRoot("sockdiag ls -j names exactly the sockets ss shows", () => {
  let scene: ListScene;
  let port: number;

  before(async () => {
    await cleanupLeftovers();
    scene = await startScene({ label: "ls-ss" });
    const listener = scene.held.find(
      (s) => s.protocol === "tcp" && s.state === "listening" && s.src === "127.0.0.1",
    );
    assert.ok(listener);
    port = listener.sport;
  });
  after(async () => {
    await scene?.stop();
  });

  for (const flags of FLAG_SETS) {
    test(`ls ${flags.join(" ") || "(no flags)"}`, async () => {
      const args = flags.map((a) =>
        a.replaceAll("{PORT}", String(port)).replaceAll("{NEXT}", String(port + 1)),
      );
      const ours = (await sockdiagJson(["ls", "-N", scene.ns.name, ...args])).filter((s) =>
        LISTED_NETIDS.has(netidOf(s)),
      );
      const out = await runSs(["-N", scene.ns.name, "-H", "-n", "-e", ...args]);
      const theirs = parseSs(out, columnDefaults(args)).filter((r) => LISTED_NETIDS.has(r.netid));
      assert.ok(theirs.length > 0, "the scene holds sockets these flags select");
      assert.deepEqual(ours.map(keyOf).sort(), theirs.map(ssKey).sort(), `ss printed:\n${out}`);
      // Each socket is listed once, as what ss calls it, in the namespace asked for.
      assert.equal(new Set(ours.map(keyOf)).size, ours.length);
      const netids = new Map(theirs.map((r) => [ssKey(r), r.netid]));
      for (const s of ours) assert.equal(netidOf(s), netids.get(keyOf(s)), JSON.stringify(s));
      assert.ok(ours.every((s) => s.netns === scene.ns.name));
    });
  }

  test("the comparisons are not vacuous: -a lists every socket the holder opened", async () => {
    const ours = await sockdiagJson(["ls", "-N", scene.ns.name, "-a", "-t", "-u", "-x", "-M", "--udplite"]);
    assertAllListed(ours, scene.listed);
  });

  test("the default without -a lists connected sockets only", async () => {
    const ours = await sockdiagJson(["ls", "-N", scene.ns.name]);
    assert.ok(ours.length > 0);
    assert.deepEqual([...new Set(ours.map((s) => s.state))], ["established"]);
  });
});
