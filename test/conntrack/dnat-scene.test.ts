/**
 * The stale-UDP-conntrack scene, against the real kernel: in a namespace, nftables DNATs a virtual
 * IP to backend A; a client connected to the virtual IP sends, A receives; the rule is switched to
 * backend B, and the client's next datagram still reaches A (its conntrack entry is stale);
 * `sockdiag terminate-backend A` deletes that entry; the next datagram reaches B, and the client's
 * own socket (connected to the virtual IP, not to A) was not destroyed.
 */
import assert from "node:assert/strict";
import { type ChildProcessWithoutNullStreams, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface } from "node:readline";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { listConntrack } from "../../src/conntrack/index.js";
import { listSockets } from "../../src/sockets/index.js";
import { sockdiag } from "../cli/cli.js";
import { cleanupLeftovers, createNetns, describeAsRoot, type ScratchNetns } from "../kit/index.js";

const run = promisify(execFile);
const CHILD = fileURLToPath(new URL("../kit/dnat-main.js", import.meta.url));
const VIP = "10.62.0.100";
const VPORT = 53;
const PORT_A = 7001;
const PORT_B = 7002;

/** The scene's child: send a token, await which backend got it. */
class DnatChild {
  private readonly lines: AsyncIterator<string>;
  constructor(readonly proc: ChildProcessWithoutNullStreams) {
    this.lines = createInterface({ input: proc.stdout })[Symbol.asyncIterator]();
  }
  async next(): Promise<Record<string, unknown>> {
    const { value, done } = await this.lines.next();
    if (done) throw new Error("the DNAT child ended");
    return JSON.parse(value) as Record<string, unknown>;
  }
  /** Send `token` from the client and return the backend that received it. */
  async send(token: string): Promise<string> {
    this.proc.stdin.write(`send ${token}\n`);
    const m = await this.next();
    if (m.sendError) throw new Error(`the client's send failed: ${String(m.sendError)}`);
    assert.equal(m.token, token);
    return String(m.got);
  }
}

async function nft(ns: ScratchNetns, ...args: string[]): Promise<void> {
  await run("ip", ["netns", "exec", ns.name, "nft", ...args]);
}

async function dnatTo(ns: ScratchNetns, port: number): Promise<void> {
  await nft(ns, "flush", "chain", "ip", "sdt", "out");
  await nft(
    ns,
    "add",
    "rule",
    "ip",
    "sdt",
    "out",
    "ip",
    "daddr",
    VIP,
    "udp",
    "dport",
    String(VPORT),
    "dnat",
    "to",
    `127.0.0.1:${port}`,
  );
}

describeAsRoot("terminate-backend clears the stale conntrack entry of a DNATed UDP client", () => {
  let ns: ScratchNetns;
  let child: DnatChild;

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("dnat");
    await ns.ip("addr", "add", `${VIP}/32`, "dev", "lo");
    await nft(ns, "add", "table", "ip", "sdt");
    await nft(ns, "add", "chain", "ip", "sdt", "out", "{ type nat hook output priority -100 ; }");
    await dnatTo(ns, PORT_A);
    const proc = spawn("ip", [
      "netns",
      "exec",
      ns.name,
      process.execPath,
      CHILD,
      String(PORT_A),
      String(PORT_B),
      VIP,
      String(VPORT),
    ]);
    child = new DnatChild(proc);
    assert.equal((await child.next()).ready, true);
  });

  after(async () => {
    if (child) {
      child.proc.stdin.end("stop\n");
      child.proc.kill();
      await once(child.proc, "exit").catch(() => {});
    }
    await ns?.remove();
  });

  test("stale before, reaches B after; the client socket lives on", async () => {
    assert.equal(await child.send("1"), "A");
    await dnatTo(ns, PORT_B);
    assert.equal(await child.send("2"), "A", "the entry made under the old rule still sends to A");
    const stale = listConntrack({
      netns: ns.name,
      protocol: "udp",
      reply: { src: "127.0.0.1", sport: PORT_A },
    });
    assert.equal(stale.length, 1);
    assert.deepEqual(stale[0]!.original.dst, VIP);
    assert.ok(stale[0]!.flags.includes("DST_NAT"));
    const [client] = listSockets({ netns: ns.name, protocols: ["udp"], filter: { dst: VIP, dport: VPORT } });
    assert.ok(client, "the client is listed, connected to the virtual IP");

    const r = await sockdiag(["terminate-backend", `127.0.0.1:${PORT_A}`, "-N", ns.name, "-j"]);
    assert.equal(r.code, 0, r.stderr);
    const report = JSON.parse(r.stdout);
    assert.deepEqual(report.conntrack, {
      matched: 1,
      deleted: 1,
      wouldDelete: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(report.namespaces[0].conntrack, report.conntrack);
    assert.equal(report.total.destroyed, 0, "no socket is connected to A itself");

    assert.equal(await child.send("3"), "B", "with the stale entry gone the next datagram is DNATed anew");
    const [after] = listSockets({ netns: ns.name, protocols: ["udp"], filter: { dst: VIP, dport: VPORT } });
    assert.equal(after?.cookie, client.cookie, "the client's own socket was not destroyed");
    assert.equal(listConntrack({ netns: ns.name, reply: { src: "127.0.0.1", sport: PORT_A } }).length, 0);
  });

  test("--no-conntrack leaves the entry, and the datagram still goes to the old backend", async () => {
    // Now the flow is DNATed to B; switch back to A so that B's entry is the stale one.
    await dnatTo(ns, PORT_A);
    assert.equal(await child.send("4"), "B");
    const r = await sockdiag([
      "terminate-backend",
      `127.0.0.1:${PORT_B}`,
      "-N",
      ns.name,
      "--no-conntrack",
      "-j",
    ]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(JSON.parse(r.stdout).conntrack, undefined);
    assert.equal(await child.send("5"), "B");
    const dry = await sockdiag([
      "terminate-backend",
      `127.0.0.1:${PORT_B}`,
      "-N",
      ns.name,
      "--dry-run",
      "-j",
    ]);
    assert.equal(JSON.parse(dry.stdout).conntrack.matched, 1);
    assert.equal(await child.send("6"), "B", "a dry run deletes nothing");
    const text = await sockdiag(["terminate-backend", `127.0.0.1:${PORT_B}`, "-N", ns.name]);
    assert.equal(text.code, 0, text.stderr);
    assert.match(text.stdout, /conntrack: 1 matched, 1 deleted, 0 already gone, 0 failed/);
    assert.equal(await child.send("7"), "A");
  });
});
