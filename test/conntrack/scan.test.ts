/**
 * ConntrackScan over a fake connection, without root: a kernel without ctnetlink (EOPNOTSUPP to the
 * dump) or without nfnetlink (the socket cannot be made) is ConntrackUnavailableError — the note
 * case — while other refusals stay errors; the dump's messages are decoded and checked in user space.
 * A namespace whose kernel counts no entry is not dumped; one whose kernel does not answer the
 * count is.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ConntrackUnavailableError } from "../../src/conntrack/errors.js";
import { planConntrack } from "../../src/conntrack/query.js";
import { ConntrackScan } from "../../src/conntrack/scan.js";
import { NetlinkError } from "../../src/netlink/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { entryMessage, statsMessage, T } from "../ctnl/ct-layout.js";
import {
  type Delivery,
  doneAnswer,
  errorAnswer,
  FakeNetlink,
  type SentMessage,
} from "../kit/fake-netlink.js";

const host = { netns: undefined, ref: undefined, label: undefined };

test("EOPNOTSUPP to the dump (no ctnetlink) is ConntrackUnavailableError", () => {
  const fake = new FakeNetlink({ respond: (m) => [errorAnswer(m, Errno.EOPNOTSUPP)] });
  using scan = new ConntrackScan(host, planConntrack({}), () => fake);
  assert.throws(() => scan.each(() => {}), ConntrackUnavailableError);
  assert.throws(() => [...scan.entries()], ConntrackUnavailableError);
});

test("no nfnetlink (EPROTONOSUPPORT at socket()) is ConntrackUnavailableError; EPERM stays itself", () => {
  const noSocket = () => {
    throw new SysError("socket", Errno.EPROTONOSUPPORT);
  };
  assert.throws(
    () =>
      new ConntrackScan({ netns: undefined, ref: undefined, label: "pod-a" }, planConntrack({}), noSocket),
    (err: unknown) => {
      return (
        err instanceof ConntrackUnavailableError &&
        /^pod-a: no conntrack here/.test(err.message) &&
        err.cause instanceof SysError
      );
    },
  );
  const fake = new FakeNetlink({ respond: (m) => [errorAnswer(m, Errno.EPERM)] });
  using scan = new ConntrackScan(host, planConntrack({}), () => fake);
  assert.throws(
    () => scan.each(() => {}),
    (err: unknown) => err instanceof NetlinkError && err.code === "EPERM",
  );
});

test("a dump split across receives is decoded entry by entry, and the user-space check runs", () => {
  const fake = new FakeNetlink({
    messagesPerReceive: 1,
    respond: (m) =>
      m.type === T.GET
        ? [
            entryMessage(
              { proto: 17, orig: { src: "10.0.0.1", dst: "10.0.0.9", sport: 1, dport: 53 }, id: 1 },
              m.seq,
            ),
            entryMessage(
              { proto: 6, orig: { src: "10.0.0.1", dst: "10.0.0.9", sport: 2, dport: 80 }, id: 2 },
              m.seq,
            ),
            entryMessage(
              { proto: 17, orig: { src: "10.0.0.2", dst: "10.0.0.9", sport: 3, dport: 53 }, id: 3 },
              m.seq,
            ),
            doneAnswer(m),
          ]
        : [errorAnswer(m, Errno.EINVAL)],
  });
  // kernelFilter false: the fake sends everything, as a kernel without CTA_FILTER would.
  using scan = new ConntrackScan(
    host,
    planConntrack({ family: "inet", original: { dport: 53 }, kernelFilter: false }),
    () => fake,
  );
  assert.deepEqual(
    [...scan.entries()].map((e) => e.id),
    [1, 3],
  );
  assert.ok(fake.receives >= 4, "one message per receive");
});

describe("the entry count before the dump", () => {
  const entry = { proto: 17, orig: { src: "10.0.0.1", dst: "10.0.0.9", sport: 1, dport: 53 }, id: 4 };
  const kernel = (count: (m: SentMessage) => Delivery[]) =>
    new FakeNetlink({
      respond: (m) => (m.type === T.GET_STATS ? count(m) : [entryMessage(entry, m.seq), doneAnswer(m)]),
    });
  const plan = planConntrack({
    protocol: "udp",
    anyOf: [{ original: { src: "10.0.0.1" } }, { original: { src: "fd00::1" } }],
  });
  const dumps = (fake: FakeNetlink) => fake.sent.filter((m) => m.type === T.GET).length;

  test("a count of 0 sends no dump, for each() and entries()", () => {
    const fake = kernel((m) => [statsMessage(0, m.seq), errorAnswer(m, 0)]);
    using scan = new ConntrackScan(host, plan, () => fake);
    const seen: number[] = [];
    scan.each((e) => seen.push(e.id));
    assert.deepEqual([seen, [...scan.entries()], scan.count(), dumps(fake)], [[], [], 0, 0]);
    assert.equal(fake.sent.filter((m) => m.type === T.GET_STATS).length, 1, "asked once");
    assert.equal(fake.pending, 0, "the ack was read");
  });

  test("a count above 0 dumps every family asked", () => {
    assert.equal(plan.filters.length, 2, "one dump per family");
    const fake = kernel((m) => [statsMessage(3, m.seq), errorAnswer(m, 0)]);
    using scan = new ConntrackScan(host, plan, () => fake);
    assert.deepEqual(
      [...scan.entries()].map((e) => e.id),
      [4, 4],
    );
    assert.deepEqual([scan.count(), dumps(fake)], [3, 2]);
  });

  test("no count (refused, or acked without one) falls back to dumping", () => {
    for (const answer of [
      (m: SentMessage) => [errorAnswer(m, Errno.EINVAL)],
      (m: SentMessage) => [errorAnswer(m, Errno.EOPNOTSUPP)],
      (m: SentMessage) => [errorAnswer(m, 0)],
    ]) {
      const fake = kernel(answer);
      using scan = new ConntrackScan(host, plan, () => fake);
      const seen: number[] = [];
      scan.each((e) => seen.push(e.id));
      assert.deepEqual([seen, scan.count(), dumps(fake)], [[4, 4], undefined, 2]);
    }
  });
});
