/**
 * `sockdiag kill` without CAP_NET_ADMIN, against sockets a holder holds in the host namespace (the
 * unprivileged child's own): a clear EPERM report naming CAP_NET_ADMIN, exit 1, one failure and
 * every other match skipped, and nothing destroyed. Only loopback sockets of this test are matched:
 * they are connected to a port this test's receiver holds.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Errno } from "../../src/sys/index.js";
import { describeAsRoot, type HeldSocket, Holder } from "../kit/index.js";
import { sockdiag } from "./cli.js";

interface KillJson {
  sockets: unknown[];
  report: {
    matched: number;
    destroyed: number;
    gone: number;
    failed: Array<{ code: string; errno: number; message: string }>;
    skipped: number;
    stops: Array<{ protocol?: string; code: string; reason: string }>;
  };
}

const CLIENTS = 4;

describeAsRoot("sockdiag kill without CAP_NET_ADMIN", () => {
  let holder: Holder;
  let receiver: HeldSocket;
  let clients: HeldSocket[];

  before(async () => {
    holder = await Holder.start();
    [receiver] = (await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } })) as [HeldSocket];
    clients = await holder.open(
      { kind: "udp", connect: { address: "127.0.0.1", port: receiver.sport } },
      CLIENTS,
    );
  });

  after(async () => {
    await holder?.stop();
  });

  const filter = () => ["dst", `127.0.0.1:${receiver.sport}`];
  async function assertAllAlive(): Promise<void> {
    assert.deepEqual(
      await holder.poll(clients),
      clients.map(() => Errno.EAGAIN),
    );
    assert.deepEqual(
      await holder.send(clients),
      clients.map(() => 0),
    );
  }

  test("-j: exit 1, one EPERM failure naming CAP_NET_ADMIN, the rest skipped, nothing destroyed", async () => {
    const result = await sockdiag(["kill", "-u", "-j", ...filter()], { unprivileged: true });
    assert.equal(result.code, 1, result.stderr);
    const output = result.stdout;
    const { sockets, report } = JSON.parse(result.stdout) as KillJson;
    assert.deepEqual(sockets, [], output);
    assert.deepEqual(
      [report.matched, report.destroyed, report.gone, report.skipped],
      [CLIENTS, 0, 0, CLIENTS - 1],
      output,
    );
    assert.deepEqual(
      report.failed.map((f) => [f.code, f.errno]),
      [["EPERM", Errno.EPERM]],
    );
    assert.match(report.failed[0]?.message ?? "", /CAP_NET_ADMIN/);
    assert.equal(report.stops.length, 1);
    assert.equal(report.stops[0]?.code, "EPERM");
    assert.equal(report.stops[0]?.protocol, undefined, "EPERM stops every protocol");
    assert.match(report.stops[0]?.reason ?? "", /CAP_NET_ADMIN/);
    await assertAllAlive();
  });

  test("table form: stderr says EPERM and CAP_NET_ADMIN once, and how many were not attempted", async () => {
    const result = await sockdiag(["kill", "-u", ...filter()], { unprivileged: true });
    assert.equal(result.code, 1, result.stderr);
    assert.equal(result.stderr.split("CAP_NET_ADMIN").length - 1, 1, result.stderr);
    assert.match(result.stderr, /EPERM/);
    assert.match(
      result.stderr,
      new RegExp(
        `^${CLIENTS} matched, 0 destroyed, 0 already gone, 1 failed, ${CLIENTS - 1} not attempted$`,
        "m",
      ),
    );
    await assertAllAlive();
  });
});
