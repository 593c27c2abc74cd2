/**
 * ConntrackScan over a fake connection, without root: a kernel without ctnetlink (EOPNOTSUPP to the
 * dump) or without nfnetlink (the socket cannot be made) is ConntrackUnavailableError — the note
 * case — while other refusals stay errors; the dump's messages are decoded and checked in user space.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import { planConntrack } from "../../src/conntrack/query.js";
import { ConntrackScan, ConntrackUnavailableError } from "../../src/conntrack/scan.js";
import { NetlinkError } from "../../src/netlink/index.js";
import { Errno, SysError } from "../../src/sys/errors.js";
import { entryMessage, T } from "../ctnl/ct-layout.js";
import { doneAnswer, errorAnswer, FakeNetlink } from "../kit/fake-netlink.js";

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
        : [],
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
