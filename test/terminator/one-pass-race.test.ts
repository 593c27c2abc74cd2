/**
 * The one pass's counters against sockets opened or closed while it runs, on the real kernel: a
 * namespace holds a socket in flight in SCM_RIGHTS (no task holds it: only its UDP counter shows
 * it) beside sockets this process holds there. When a held one is closed right after the pass, or
 * opened right before it, or both at once (each counter read then sees one of the two, the pass
 * both), a count equals what tasks held at the pass — the namespace must be walked all the same,
 * and the socket in flight destroyed. And the run visits
 * the namespaces it listed for the counters before the pass: one unpinned while the pass runs is
 * still visited (its handle is kept), its socket destroyed.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { test } from "node:test";
import { findConnectedSockets } from "../../src/bpf/index.js";
import { AF_INET, close } from "../../src/sys/socket.js";
import { BackendTerminator, type FindSockets } from "../../src/terminator/index.js";
import { connectedUdpIn, describeAsRoot, type ScratchNetns, withNetns } from "../kit/index.js";
import { ECONNABORTED, errorsOf, holdIn, PORT, V4 } from "./one-pass-holder.js";

/** A socket of this process in `ns`, connected to another port than the backend's. */
const bystander = (ns: ScratchNetns) => connectedUdpIn(ns.path, AF_INET, V4, PORT + 1);

/** Terminate the backend with `find` around the pass: the namespace's verdict and its socket in flight. */
async function runAround(
  around: (ns: ScratchNetns) => FindSockets,
): Promise<{ how: string; flight: number }> {
  return withNetns(1, async ([ns]) => {
    await ns!.ip("link", "set", "lo", "up");
    const held = await holdIn(ns!, ["flight"]);
    try {
      const report = new BackendTerminator(
        { discover: false, conntrack: false, onePass: "on" },
        { find: around(ns!) },
      ).terminateMany([{ address: V4, port: PORT }]);
      assert.equal(report.onePass?.used, true);
      const how = report.namespaces.find((n) => n.netns === ns!.name)?.onePass ?? "";
      const [[, flight]] = (await errorsOf(held)) as [[string, number]];
      return { how, flight };
    } finally {
      held.child.kill();
    }
  });
}

/**
 * runAround with bystanders around the pass: one opened before the run and closed right after the
 * pass (`closedAfter`), one opened right before the pass (`openedBefore`, closed after the run).
 */
async function withBystanders(around: {
  closedAfter: boolean;
  openedBefore: boolean;
}): Promise<{ how: string; flight: number }> {
  const open = new Set<number>();
  const opened = (fd: number) => {
    open.add(fd);
    return fd;
  };
  try {
    return await runAround((ns) => {
      const closing = around.closedAfter ? opened(bystander(ns)) : undefined;
      return (options) => {
        if (around.openedBefore) opened(bystander(ns));
        try {
          return findConnectedSockets(options);
        } finally {
          if (closing !== undefined) {
            open.delete(closing);
            close(closing);
          }
        }
      };
    });
  } finally {
    for (const fd of open) close(fd);
  }
}

describeAsRoot("the one pass's counters against sockets opened or closed meanwhile", () => {
  test("a held socket closed right after the pass: its namespace is walked, the socket in flight destroyed", async () => {
    const { how, flight } = await withBystanders({ closedAfter: true, openedBefore: false });
    // At the read after the pass only the socket in flight; the pass's second look misses the bystander.
    assert.match(how, /exceed what tasks hold \(UDP 1, UDP6 0; tasks hold 0 and 0/);
    assert.equal(flight, ECONNABORTED);
  });

  test("a socket opened right before the pass and held: its namespace is walked all the same", async () => {
    const { how, flight } = await withBystanders({ closedAfter: false, openedBefore: true });
    assert.match(how, /exceed what tasks hold \(UDP 2, UDP6 0; tasks hold 1 and 0/);
    assert.equal(flight, ECONNABORTED);
  });

  test("a socket closed right after the pass beside one opened right before it: walked all the same", async () => {
    const { how, flight } = await withBystanders({ closedAfter: true, openedBefore: true });
    // Any one read counts the socket in flight and one bystander, the pass both bystanders: only
    // the one its second look sees again counts as held.
    assert.match(how, /exceed what tasks hold \(UDP 2, UDP6 0; tasks hold 1 and 0/);
    assert.equal(flight, ECONNABORTED);
  });

  test("a namespace unpinned while the pass runs is still visited: the run walks what it listed", async () => {
    await withNetns(1, async ([ns]) => {
      const fd = connectedUdpIn(ns!.path, AF_INET, V4, PORT);
      try {
        const report = new BackendTerminator(
          { discover: false, conntrack: false, onePass: "on" },
          {
            find: (options) => {
              execFileSync("ip", ["netns", "del", ns!.name]);
              return findConnectedSockets(options);
            },
          },
        ).terminateMany([{ address: V4, port: PORT }]);
        assert.equal(report.onePass?.used, true);
        const visited = report.namespaces.find((n) => n.netns === ns!.name);
        assert.ok(visited, `${ns!.name} is in the report though its pin went before the visit`);
        assert.equal(visited.report?.destroyed, 1, visited.onePass);
        assert.ok(!report.notes.some((n) => n.netns === ns!.name), "not noted as vanished");
        assert.equal(report.ok, true);
      } finally {
        close(fd);
      }
    });
  });
});
