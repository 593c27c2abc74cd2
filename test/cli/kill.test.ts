/**
 * `sockdiag kill` end to end: the built CLI against sockets a holder holds in a throwaway namespace.
 * Exit codes, --dry-run, -j's {sockets, report}, and the protocols the kernel cannot destroy
 * (unix, mptcp), whose EOPNOTSUPP is reported once.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { Errno } from "../../src/sys/index.js";
import {
  describeAsRoot,
  type HeldSocket,
  type Holder,
  type ScratchNetns,
  ss,
  startUdpScene,
  type UdpScene,
} from "../kit/index.js";
import { sockdiag } from "./cli.js";

/** What `sockdiag kill -j` prints. */
interface KillJson {
  sockets: Array<{ protocol: string; family: string; dst?: string; dport?: number; cookie: string }>;
  report: {
    matched: number;
    destroyed: number;
    wouldDestroy: number;
    gone: number;
    failed: Array<{
      socket: { protocol: string; cookie: string };
      errno: number;
      code: string;
      message: string;
    }>;
    skipped: number;
    stops: Array<{ protocol?: string; code: string; reason: string }>;
    dryRun: boolean;
    failures: unknown[];
  };
}

const cookiesOf = (sockets: ReadonlyArray<{ cookie: string }>) => sockets.map((s) => s.cookie).sort();
const count = (text: string, part: string) => text.split(part).length - 1;

describeAsRoot("sockdiag kill", () => {
  let scene: UdpScene;
  let ns: ScratchNetns;
  let holder: Holder;
  let receiver: HeldSocket;
  let clients: UdpScene["clients"];

  before(async () => {
    scene = await startUdpScene("kill");
    ({ ns, holder, receiver, clients } = scene);
  });

  after(async () => {
    await scene?.stop();
  });

  const kill = (...args: string[]) => sockdiag(["kill", "-N", ns.name, ...args]);
  async function assertAlive(sockets: readonly HeldSocket[]): Promise<void> {
    assert.deepEqual(
      await holder.poll(sockets),
      sockets.map(() => Errno.EAGAIN),
    );
    assert.deepEqual(
      await holder.send(sockets),
      sockets.map(() => 0),
    );
  }

  test("without a filter and without --destroy-all it exits 2 and destroys nothing", async () => {
    const held = await clients(2);
    const result = await kill("-u");
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /refusing to destroy every selected socket without a filter/);
    assert.match(result.stderr, /--destroy-all/);
    assert.equal(result.stdout, "");
    await assertAlive(held);
    await holder.close(held);
  });

  test("a filter of wildcards only needs --destroy-all as no filter does", async () => {
    const held = await clients(2);
    for (const filter of [["dport = :*"], ["dst", "*"], ["dst", "0.0.0.0/0", "or", "dport", "=", ":53"]]) {
      const result = await kill("-ua", ...filter);
      assert.equal(result.code, 2, result.stderr);
      assert.match(
        result.stderr,
        /refusing to destroy every selected socket with a filter that matches everything/,
      );
      assert.match(result.stderr, /--destroy-all/);
      assert.equal(result.stdout, "");
    }
    await assertAlive(held);
    await holder.close(held);
  });

  test("a bad filter exits 2 naming the offending word, destroys nothing", async () => {
    const held = await clients(1);
    const result = await kill("-u", "dport", "=", ":notaport");
    assert.equal(result.code, 2, result.stderr);
    assert.match(result.stderr, /notaport/);
    await assertAlive(held);
    await holder.close(held);
  });

  test("--dry-run lists what would be destroyed, as a table and as JSON, and destroys nothing", async () => {
    const held = await clients(3);
    const filter = [
      "sport",
      ">=",
      `:${Math.min(...held.map((s) => s.sport))}`,
      "and",
      "dport",
      "=",
      `:${receiver.sport}`,
    ];

    const table = await kill("-u", "--dry-run", ...filter);
    assert.equal(table.code, 0, table.stderr);
    for (const s of held) assert.ok(table.stdout.includes(`127.0.0.1:${s.sport}`), table.stdout);
    assert.match(table.stderr, /^3 matched, 3 would be destroyed; dry run: nothing was destroyed$/m);

    const json = await kill("-u", "--dry-run", "-j", ...filter);
    assert.equal(json.code, 0, json.stderr);
    const { sockets, report } = JSON.parse(json.stdout) as KillJson;
    assert.deepEqual(cookiesOf(sockets), cookiesOf(held));
    assert.deepEqual(
      [report.dryRun, report.matched, report.destroyed, report.wouldDestroy, report.failed, report.skipped],
      [true, 3, 0, 3, [], 0],
    );
    assert.equal(
      report.matched,
      report.destroyed + report.wouldDestroy + report.gone + report.failed.length + report.skipped,
      "the dry run's report balances",
    );
    await assertAlive(held);
    await holder.close(held);
  });

  test("-j prints {sockets, report}; the destroyed sockets' owners see ECONNABORTED, the others live", async () => {
    const targets = await clients(3);
    const [other] = (await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } })) as [HeldSocket];
    const bystanders = await holder.open(
      { kind: "udp", connect: { address: "127.0.0.1", port: other.sport } },
      2,
    );

    const result = await kill("-u", "-j", "dst", `127.0.0.1:${receiver.sport}`);

    assert.equal(result.code, 0, result.stderr);
    assert.equal(result.stderr, "");
    const { sockets, report } = JSON.parse(result.stdout) as KillJson;
    assert.deepEqual(Object.keys(JSON.parse(result.stdout) as object), ["sockets", "report"]);
    assert.deepEqual(cookiesOf(sockets), cookiesOf(targets));
    assert.ok(sockets.every((s) => s.protocol === "udp" && s.dport === receiver.sport));
    assert.deepEqual(report, {
      matched: 3,
      destroyed: 3,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
      stops: [],
      dryRun: false,
      failures: [],
      notes: [],
      callbackErrors: [],
    });
    await holder.waitFor(targets, "ECONNABORTED");
    await assertAlive(bystanders);
    await holder.close([...targets, other, ...bystanders]);
  });

  test("the table form prints the destroyed sockets on stdout and the counts on stderr", async () => {
    const targets = await clients(2);
    const result = await kill("-u", "dst", `127.0.0.1:${receiver.sport}`);
    assert.equal(result.code, 0, result.stderr);
    for (const s of targets) assert.ok(result.stdout.includes(`127.0.0.1:${s.sport}`), result.stdout);
    assert.match(result.stderr, /^2 matched, 2 destroyed, 0 already gone, 0 failed$/m);
    await holder.waitFor(targets, "ECONNABORTED");
    await holder.close(targets);
  });

  test("unix sockets: exit 1, EOPNOTSUPP reported once (no SOCK_DESTROY handler), the rest not attempted", async () => {
    const pairs = await holder.open({ kind: "pair", type: "stream" }, 3);

    const json = await kill("-x", "--destroy-all", "-j");
    assert.equal(json.code, 1, json.stderr);
    const { sockets, report } = JSON.parse(json.stdout) as KillJson;
    assert.deepEqual(sockets, []);
    assert.equal(report.matched, pairs.length);
    assert.deepEqual(
      report.failed.map((f) => [f.socket.protocol, f.code]),
      [["unix", "EOPNOTSUPP"]],
    );
    assert.match(report.failed[0]?.message ?? "", /no SOCK_DESTROY handler/);
    assert.equal(report.skipped, pairs.length - 1);
    assert.deepEqual(
      report.stops.map((s) => [s.protocol, s.code]),
      [["unix", "EOPNOTSUPP"]],
    );
    assert.equal(report.destroyed, 0);

    const text = await kill("-x", "--destroy-all");
    assert.equal(text.code, 1, text.stderr);
    assert.equal(count(text.stderr, "no SOCK_DESTROY handler"), 1, text.stderr);
    assert.match(text.stderr, new RegExp(`, ${pairs.length - 1} not attempted`));
    assert.deepEqual(
      await holder.send(pairs),
      pairs.map(() => 0),
    );
    await holder.close(pairs);
  });

  test("mptcp sockets: exit 1, EOPNOTSUPP reported once, the connections live on", async () => {
    const [listener] = await holder.open({
      kind: "listener",
      protocol: "mptcp",
      bind: { address: "127.0.0.1" },
    });
    assert.ok(listener);
    const conns = await holder.open({ kind: "connection", listener: listener.id }, 2);
    const listed = await ss(["-M", "state", "established"], { netns: ns.name });
    assert.ok(listed.length >= 2, "ss lists the mptcp connections");

    const result = await kill("-M", "--destroy-all", "-j");
    assert.equal(result.code, 1, result.stderr);
    const { report } = JSON.parse(result.stdout) as KillJson;
    assert.ok(report.matched >= 2, `matched ${report.matched}`);
    assert.deepEqual(
      report.failed.map((f) => [f.socket.protocol, f.code]),
      [["mptcp", "EOPNOTSUPP"]],
    );
    assert.match(report.failed[0]?.message ?? "", /mptcp.*no SOCK_DESTROY handler/);
    assert.deepEqual(
      report.stops.map((s) => [s.protocol, s.code]),
      [["mptcp", "EOPNOTSUPP"]],
    );
    assert.deepEqual([report.destroyed, report.skipped], [0, report.matched - 1]);
    assert.deepEqual(
      await holder.poll(conns),
      conns.map(() => Errno.EAGAIN),
    );
    assert.equal((await ss(["-M", "state", "established"], { netns: ns.name })).length, listed.length);
    await holder.close([listener, ...conns]);
  });
});
