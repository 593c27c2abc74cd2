/**
 * The Dumper's one pump, read three ways — each() to the end, steps() a batch at a time, sockets()
 * as a generator — against a fake connection whose dumps span several batches and receives: the
 * same sockets in the same order; a pause after every batch, a dump's last included, before the
 * next dump is requested; an error mid-dump ends the walk with no further request; a protocol the
 * kernel cannot list is skipped where the query allows it; a consumer that stops early leaves the
 * next dump unrequested and the connection marked as holding an unread answer.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { NetlinkError } from "../../src/netlink/index.js";
import { Dumper } from "../../src/sockets/dump.js";
import { planQuery, type SocketQuery } from "../../src/sockets/query.js";
import { Errno, MisuseError } from "../../src/sys/errors.js";
import { INET_DIAG_MSG, pack } from "../diag/layout.js";
import { doneAnswer, errorAnswer, FakeNetlink, partAnswer, type SentMessage } from "../kit/index.js";

const SOCK_DIAG_BY_FAMILY = 20;
const IPPROTO = { tcp: 6, udp: 17, sctp: 132 } as const;
/** More than one batch of pump's (1024 sockets), so the TCP dump takes two. */
const TCP_SOCKETS = 1500;
const UDP_SOCKETS = 3;
/** Inodes tell the dumps apart: TCP's from 1, UDP's from 100,001. */
const UDP_INODES = 100_000;

const inodes = (first: number, n: number) => Array.from({ length: n }, (_, i) => first + i + 1);
const ALL = [...inodes(0, TCP_SOCKETS), ...inodes(UDP_INODES, UDP_SOCKETS)];

interface KernelOptions {
  /** The TCP dump's answer ends in this errno after its first `after` sockets. */
  tcpFails?: { errno: number; after: number };
  /** Protocols without a diag handler: their dumps are answered with ENOENT. */
  missing?: readonly number[];
}

/** An established IPv4 socket's inet_diag_msg in the answer to `m`. */
const established = (m: SentMessage, inode: number) =>
  partAnswer(
    m,
    SOCK_DIAG_BY_FAMILY,
    pack(INET_DIAG_MSG, { idiag_family: 2, idiag_state: 1, idiag_inode: inode }),
  );

/** A kernel answering inet dumps with established sockets, two messages a receive. */
function kernel(options: KernelOptions = {}): FakeNetlink {
  return new FakeNetlink({
    respond: (m: SentMessage) => {
      const protocol = m.payload[1]!;
      if (options.missing?.includes(protocol)) return [errorAnswer(m, Errno.ENOENT)];
      const tcp = protocol === IPPROTO.tcp;
      const fails = tcp ? options.tcpFails : undefined;
      const count = fails?.after ?? (tcp ? TCP_SOCKETS : UDP_SOCKETS);
      const parts = inodes(tcp ? 0 : UDP_INODES, count).map((inode) => established(m, inode));
      return [...parts, fails ? errorAnswer(m, fails.errno) : doneAnswer(m)];
    },
  });
}

const QUERY: SocketQuery = { protocols: ["tcp", "udp"], families: ["inet"], states: ["established"] };
const OPTIONS = { attributes: false };

/** Which protocols the requests sent so far asked for, in order. */
const requested = (conn: FakeNetlink) => conn.sent.map((m) => m.payload[1]);

test("each, steps and sockets hand the same sockets, in the dumps' order", () => {
  const viaEach: number[] = [];
  new Dumper(kernel()).each(planQuery(QUERY), OPTIONS, (s) => viaEach.push(s.inode));
  const viaSteps: number[] = [];
  for (const _ of new Dumper(kernel()).steps(planQuery(QUERY), OPTIONS, (s) => viaSteps.push(s.inode)));
  const viaSockets = [...new Dumper(kernel()).sockets(planQuery(QUERY), OPTIONS)].map((s) => s.inode);
  assert.deepEqual(viaEach, ALL);
  assert.deepEqual(viaSteps, ALL);
  assert.deepEqual(viaSockets, ALL);
});

test("steps pauses after every batch, a dump's last included, before the next dump is requested", () => {
  const conn = kernel();
  const seen: number[] = [];
  const pauses: { sockets: number; requested: (number | undefined)[] }[] = [];
  for (const _ of new Dumper(conn).steps(planQuery(QUERY), OPTIONS, (s) => seen.push(s.inode)))
    pauses.push({ sockets: seen.length, requested: requested(conn) });
  assert.deepEqual(pauses, [
    { sockets: 1024, requested: [IPPROTO.tcp] },
    { sockets: TCP_SOCKETS, requested: [IPPROTO.tcp] },
    { sockets: TCP_SOCKETS + UDP_SOCKETS, requested: [IPPROTO.tcp, IPPROTO.udp] },
  ]);
});

test("sockets: a consumer that stops after the first dump's last socket leaves the next unrequested", () => {
  const conn = kernel();
  const dumper = new Dumper(conn);
  let last: Socket | undefined;
  for (const s of dumper.sockets(planQuery(QUERY), OPTIONS)) {
    last = s;
    if (s.inode === TCP_SOCKETS) break;
  }
  assert.equal(last?.inode, TCP_SOCKETS);
  assert.deepEqual(requested(conn), [IPPROTO.tcp]);
});

test("sockets: a consumer that stops mid-dump leaves its answer unread, and the dumper says so", () => {
  const conn = kernel();
  const dumper = new Dumper(conn);
  for (const s of dumper.sockets(planQuery(QUERY), OPTIONS)) if (s.inode === 10) break;
  assert.deepEqual(requested(conn), [IPPROTO.tcp]);
  assert.ok(conn.pending > 0, "the rest of the answer is still queued");
  assert.throws(
    () => dumper.each(planQuery(QUERY), OPTIONS, () => {}),
    (err: unknown) => err instanceof MisuseError && /abandoned answer/.test(err.message),
  );
});

test("an error mid-dump ends every reading with it, after the sockets before it, and nothing more is requested", () => {
  const tcpFails = { errno: Errno.EPERM, after: 1100 };
  const isEperm = (err: unknown) => err instanceof NetlinkError && err.errno === Errno.EPERM;
  const readings: [string, (conn: FakeNetlink, seen: number[]) => void][] = [
    ["each", (conn, seen) => new Dumper(conn).each(planQuery(QUERY), OPTIONS, (s) => seen.push(s.inode))],
    [
      "steps",
      (conn, seen) => {
        for (const _ of new Dumper(conn).steps(planQuery(QUERY), OPTIONS, (s) => seen.push(s.inode)));
      },
    ],
    [
      "sockets",
      (conn, seen) => {
        for (const s of new Dumper(conn).sockets(planQuery(QUERY), OPTIONS)) seen.push(s.inode);
      },
    ],
  ];
  for (const [how, read] of readings) {
    const conn = kernel({ tcpFails });
    const seen: number[] = [];
    assert.throws(() => read(conn, seen), isEperm, how);
    assert.deepEqual(requested(conn), [IPPROTO.tcp], how);
    // sockets() hands a batch only once it is whole; each() and steps() every socket as it comes.
    const handed = how === "sockets" ? 1024 : tcpFails.after;
    assert.deepEqual(seen, inodes(0, handed), how);
  }
});

test("a protocol the kernel cannot list is skipped where the query allows it, and the next dump runs", () => {
  const query: SocketQuery = { ...QUERY, protocols: ["sctp", "udp"], ignoreUnsupported: ["sctp"] };
  const read = {
    each: (dumper: Dumper, plan: ReturnType<typeof planQuery>) => {
      const seen: number[] = [];
      dumper.each(plan, OPTIONS, (s) => seen.push(s.inode));
      return seen;
    },
    sockets: (dumper: Dumper, plan: ReturnType<typeof planQuery>) =>
      [...dumper.sockets(plan, OPTIONS)].map((s) => s.inode),
  };
  for (const [how, run] of Object.entries(read)) {
    const conn = kernel({ missing: [IPPROTO.sctp] });
    const plan = planQuery(query);
    assert.deepEqual(run(new Dumper(conn), plan), inodes(UDP_INODES, UDP_SOCKETS), how);
    assert.deepEqual(requested(conn), [IPPROTO.sctp, IPPROTO.udp], how);
    assert.deepEqual([...plan.unsupported], ["sctp"], how);
  }
});
