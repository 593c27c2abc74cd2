/**
 * Packet and netlink sockets, `-A QUERY` (and its other spelling `--socket=QUERY`) and `-f FAMILY`, against ss (iproute2's misc/ss.c): in a
 * scene of every kind of inet and unix socket plus packet and netlink sockets held by the kit's
 * child, each flag set must list through `sockdiag ls -j` exactly the sockets `ss -n -e` prints
 * (keyed by cookie, or for netlink rows, which carry none, by protocol and port id), with ss's
 * Netid and its Local and Peer cells. Each lister's own sock_diag socket (protocol 4, its own port
 * id) is left out on both sides: it is the one socket the two cannot share.
 */
import assert from "node:assert/strict";
import { before, test } from "node:test";
import { describeAsRoot, type HeldSocket, parseSs, runSs, type SsRecord } from "../kit/index.js";
import { useScene } from "../sockets/list-scene.js";
import { sockdiag, sockdiagJson } from "./cli.js";

/** One object of `ls -j`, as far as these tests read it. */
interface Listed {
  netns: string;
  family: string;
  protocol: string;
  type?: string;
  state: string;
  cookie: string;
  inode: number;
  ethertype?: number;
  ifindex?: number;
  interface?: string | null;
  netlinkProtocol?: number;
  portid?: number;
  connected?: boolean;
  dstGroup?: number;
  dstPortid?: number;
}

const NETIDS: Record<string, Record<string, string>> = {
  unix: { stream: "u_str", dgram: "u_dgr", seqpacket: "u_seq" },
  packet: { raw: "p_raw", dgram: "p_dgr" },
};

function netidOf(s: Listed): string {
  if (s.family === "netlink") return "nl";
  return NETIDS[s.family]?.[s.type ?? ""] ?? s.protocol;
}

/** The Local and Peer cells ss -n prints for a packet or netlink socket. */
function cellsOf(s: Listed): [string, string] {
  if (s.family === "packet")
    return [`${s.ethertype === 3 ? "*" : `[${s.ethertype}]`}:${s.ifindex === 0 ? "*" : s.interface}`, "*"];
  return [`${s.netlinkProtocol}:${s.portid}`, s.connected ? `${s.dstGroup}:${s.dstPortid}` : "*"];
}

/** A socket's key and what is compared of it: inet and packet rows by cookie, unix by inode, netlink by its cells. */
function oursKey(s: Listed): string {
  if (s.family === "unix") return `u:${netidOf(s)}:${s.inode}`;
  if (s.family === "netlink") return `nl:${cellsOf(s).join(" ")}`;
  if (s.family === "packet") return `${netidOf(s)}:${s.cookie}:${cellsOf(s).join(" ")}`;
  return `${s.protocol}:${s.cookie}`;
}

function theirsKey(r: SsRecord): string {
  const sk = r.extra.find((t) => t.startsWith("sk:"))?.slice(3);
  if (r.family === "unix") return `u:${r.netid}:${r.inode}`;
  if (r.netid === "nl") return `nl:${r.src} ${r.dst}`;
  if (r.netid.startsWith("p_")) return `${r.netid}:${BigInt(`0x${sk}`)}:${r.src} ${r.dst}`;
  return `${r.netid}:${r.cookie}`;
}

/** A lister's own NETLINK_SOCK_DIAG socket: protocol 4 with a port id of its own (the kernel's is 4:0). */
const ownDiagSocket = (key: string) => /^nl:4:(?!0 )/.test(key);

/** The tables sockdiag lists (ss also prints dccp errors and raw sockets from /proc, none here). */
const COMPARED = /^(tcp|udp|mptcp|sctp|u|p_raw|p_dgr|nl):/;

interface Case {
  /** sockdiag's flags. */
  args: string[];
  /** ss's, when they differ (ss has no --netlink). */
  ss?: string[];
  /** What ss leaves out of a row with one table or one state. */
  netid?: string;
  state?: "close" | "established";
  /** Only ss rows of this netid count (see packet_raw below). */
  only?: string;
  /** ss lists none (packet and netlink sockets are UNCONN, and -A alone means connected ones). */
  none?: true;
}

const CASES: readonly Case[] = [
  { args: ["-0"], state: "close" },
  { args: ["--packet", "-a"] },
  { args: ["--netlink"], ss: ["-f", "netlink"], netid: "nl", state: "close" },
  { args: ["-f", "netlink"], netid: "nl", state: "close" },
  { args: ["-f", "link"], state: "close" },
  { args: ["-A", "netlink"], netid: "nl", state: "close", none: true },
  { args: ["-A", "netlink", "-a"], netid: "nl", state: "close" },
  { args: ["-A", "packet", "-a"], state: "close" },
  // ss 6.1 lists dgram packet sockets under packet_raw too (its netlink path never checks the
  // type); sockdiag lists the table named: compared with ss's p_raw rows of -A packet.
  { args: ["-A", "packet_raw", "-a"], ss: ["-A", "packet", "-a"], only: "p_raw" },
  { args: ["-A", "p_dgr"], ss: ["-A", "packet"], only: "p_dgr", none: true },
  { args: ["-A", "inet"] },
  { args: ["-A", "inet", "-a"] },
  { args: ["-A", "tcp,udp", "-a"] },
  { args: ["-A", "tcp,udp"] },
  { args: ["-A", "unix_dgram", "-a"], netid: "u_dgr" },
  { args: ["-A", "unix_stream,unix_seqpacket", "-a"] },
  { args: ["-A", "u_str"], netid: "u_str", state: "established" },
  { args: ["-A", "all"] },
  { args: ["-A", "all", "-a"] },
  { args: ["-A", "all,!netlink", "-a"] },
  { args: ["-f", "inet6"] },
  { args: ["-f", "inet6", "-a"] },
  { args: ["-f", "inet", "-l"] },
  { args: ["-f", "unix"] },
  { args: ["-f", "unix", "-f", "netlink"] },
  { args: ["-0", "-t"] },
  { args: ["-u", "-0"] },
  { args: ["-x", "-0"] },
  { args: ["-4", "-0"] },
  { args: ["-4", "-x"] },
  { args: ["-6", "-A", "udp", "-a"], netid: "udp" },
  { args: ["-t", "-A", "udp", "-a"], netid: "udp" },
  { args: ["-A", "udp", "-t", "-a"] },
  { args: ["-A", "tcp", "-f", "netlink"] },
  { args: ["-l", "-0"] },
  { args: ["-a", "--netlink", "-0"], ss: ["-a", "-f", "netlink", "-0"] },
  { args: ["-0", "state", "close"], state: "close" },
  // ss's other spelling of -A (long_opts "socket"), alone and mixed with -A.
  { args: ["--socket", "tcp,udp", "-a"] },
  { args: ["--socket=unix_dgram", "-a"], netid: "u_dgr" },
  { args: ["--socket", "netlink", "-a"], netid: "nl", state: "close" },
  { args: ["-A", "tcp", "--socket", "udp,u_str", "-a"] },
  { args: ["--socket", "all,!tcp", "-A", "!netlink"] },
  { args: ["-a", "exclude", "close"] },
];

describeAsRoot("packet and netlink sockets, -A and -f, as ss lists them", () => {
  const live = useScene({ label: "families", mptcp: false });

  const held: HeldSocket[] = [];
  before(async () => {
    const holder = live.scene.holder;
    held.push(
      ...(await holder.open({ kind: "packet", type: "raw", ethertype: 3 })),
      ...(await holder.open({ kind: "packet", type: "dgram", ethertype: 0x0800, interface: "lo" })),
      ...(await holder.open({ kind: "packet", type: "raw", ethertype: 0x86dd, interface: "lo" })),
      ...(await holder.open({ kind: "packet", type: "dgram", ethertype: 0x88cc })),
    );
    const route = await holder.open({ kind: "netlink", protocol: 0, groups: 1 });
    held.push(
      ...route,
      ...(await holder.open({ kind: "netlink", protocol: 0, connect: { portid: route[0]!.sport } })),
      ...(await holder.open({ kind: "netlink", protocol: 16 })),
      ...(await holder.open({ kind: "netlink", protocol: 15, groups: 1 })),
    );
  });

  for (const c of CASES) {
    test(`ls ${c.args.join(" ")}`, async () => {
      const ours = (await sockdiagJson(["ls", "-N", live.ns, ...c.args])) as unknown as Listed[];
      const out = await runSs(["-N", live.ns, "-H", "-n", "-e", ...(c.ss ?? c.args)]);
      const defaults = { ...(c.netid ? { netid: c.netid } : {}), ...(c.state ? { state: c.state } : {}) };
      const rows = parseSs(out, defaults).filter((r) => c.only === undefined || r.netid === c.only);
      const mine = ours.map(oursKey).filter((k) => !ownDiagSocket(k));
      const theirs = rows.map(theirsKey).filter((k) => COMPARED.test(k) && !ownDiagSocket(k));
      assert.equal(theirs.length === 0, c.none === true, `what ss lists for these flags:\n${out}`);
      assert.deepEqual(mine.sort(), theirs.sort(), `ss printed:\n${out}`);
      assert.ok(ours.every((s) => s.netns === live.ns));
    });
  }

  test("the scene's packet and netlink sockets are all listed, with their interface names", async () => {
    const ours = (await sockdiagJson(["ls", "-N", live.ns, "-0", "--netlink"])) as unknown as Listed[];
    assert.equal(held.length, 8);
    for (const h of held) {
      const s = ours.find((o) => o.cookie === h.cookie);
      assert.ok(s, `listed: ${JSON.stringify(h)}`);
      assert.deepEqual([s.family, s.inode, s.state], [h.family, h.inode, "close"]);
      if (h.family === "packet") assert.equal(s.interface ?? "*", h.src);
      else assert.equal(s.portid, h.sport);
    }
  });

  test("the table shows ss's Netid, Local and Peer cells", async () => {
    const table = await sockdiag(["ls", "-N", live.ns, "-0", "--netlink", "-H"]);
    assert.equal(table.code, 0, table.stderr);
    const rows = parseSs(table.stdout);
    const json = (await sockdiagJson(["ls", "-N", live.ns, "-0", "--netlink"])) as unknown as Listed[];
    // Each run lists its own sock_diag socket (4:PORTID): the rest is the same.
    const own = (line: string) => /^nl close 4:(?!0 )/.test(line);
    assert.deepEqual(
      rows.map((r) => `${r.netid} ${r.state} ${r.src} ${r.dst}`).filter((l) => !own(l)),
      json.map((s) => `${netidOf(s)} close ${cellsOf(s).join(" ")}`).filter((l) => !own(l)),
    );
    assert.ok(rows.some((r) => r.src.endsWith(":lo")));
  });

  test("--all-netns lists the namespace's packet and netlink sockets as -N does", async () => {
    const one = (await sockdiagJson(["ls", "-N", live.ns, "-0", "-f", "netlink"])) as unknown as Listed[];
    const all = (await sockdiagJson(["ls", "--all-netns", "-0", "-f", "netlink"])) as unknown as Listed[];
    const here = all.filter((s) => s.netns === live.ns);
    const key = (s: Listed) => oursKey(s);
    assert.deepEqual(
      here
        .map(key)
        .filter((k) => !ownDiagSocket(k))
        .sort(),
      one
        .map(key)
        .filter((k) => !ownDiagSocket(k))
        .sort(),
    );
    assert.ok(here.some((s) => s.family === "packet") && here.some((s) => s.family === "netlink"));
  });

  test("kill refuses packet and netlink sockets as it refuses unix ones, and destroys nothing", async () => {
    const before = (await sockdiagJson(["ls", "-N", live.ns, "-0", "--netlink"])) as unknown as Listed[];
    for (const [flag, family] of [
      ["-0", "packet"],
      ["--netlink", "netlink"],
    ] as const) {
      const r = await sockdiag(["kill", "-N", live.ns, flag, "--destroy-all"]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`EOPNOTSUPP: the kernel cannot destroy ${family} sockets \\(no SOCK_DESTROY handler`),
      );
      assert.match(r.stderr, / 0 destroyed/);
    }
    const after = (await sockdiagJson(["ls", "-N", live.ns, "-0", "--netlink"])) as unknown as Listed[];
    const cookies = (l: Listed[]) =>
      l
        .filter((s) => !ownDiagSocket(oursKey(s)))
        .map((s) => s.cookie)
        .sort();
    assert.deepEqual(cookies(after), cookies(before));
  });

  test("vsock, tipc and xdp: a note where the kernel has no handler, an error when named alone", async () => {
    const all = await sockdiag(["ls", "-N", live.ns, "-A", "all", "-a", "-H"]);
    assert.equal(all.code, 0, all.stderr);
    for (const [flag, protocol] of [
      ["--vsock", "vsock"],
      ["--tipc", "tipc"],
      ["--xdp", "xdp"],
    ] as const) {
      const alone = await sockdiag(["ls", "-N", live.ns, flag]);
      if (alone.code === 0) continue; // this kernel lists them
      assert.equal(alone.code, 1);
      assert.match(alone.stderr, new RegExp(`protocol ${protocol} is not supported by this kernel`));
      // ss -A all has no tipc: only vsock and xdp are noted there.
      assert.equal(all.stderr.includes(`note: ${protocol} not listed`), protocol !== "tipc", all.stderr);
    }
  });
});

describeAsRoot("-A and -f: unknown names", () => {
  test("an unknown -A or -f word is a usage error naming it and the nearest known one", async () => {
    for (const [args, word, near] of [
      [["-A", "unix_dgrm"], "unix_dgrm", "unix_dgram"],
      [["-A", "tcp,pakcet"], "pakcet", "packet"],
      [["-f", "netlnk"], "netlnk", "netlink"],
      [["-f", "lnk"], "lnk", "link"],
    ] as const) {
      const r = await sockdiag(["ls", ...args]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(
        r.stderr,
        new RegExp(`"${word}" is not a socket (table|family); did you mean "${near}"\\?`),
      );
      assert.equal(r.stdout, "");
    }
  });
});
