/**
 * `ls -s` against `ss -s`, byte for byte, in a throwaway namespace a holder fills with TCP, UDP and
 * raw sockets of both families. TCP's total (alloc) and orphan counters are the kernel's, not the
 * namespace's, so other processes may move them: each comparison runs ss, sockdiag, ss again, and
 * counts only when both ss runs agree (the counters held still around sockdiag's).
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import {
  cleanupLeftovers,
  createNetns,
  describeAsRoot,
  type HeldSocket,
  Holder,
  runSs,
  type ScratchNetns,
} from "../kit/index.js";
import { sockdiag } from "./cli.js";

interface Row {
  total: number;
  ip: number;
  ipv6: number;
}

interface JsonSummary {
  netns: string;
  total: number;
  tcp: { total: number; estab: number; closed: number; orphaned: number; timewait: number };
  transport: Record<"raw" | "udp" | "tcp" | "inet" | "frag", Row>;
}

/** ss -s text as numbers (the shape of -s -j, without netns); throws on a line it does not expect. */
function parseSsSummary(text: string): Omit<JsonSummary, "netns"> {
  const total = /^Total: (\d+)\n/.exec(text);
  const tcp = /\nTCP: +(\d+) \(estab (\d+), closed (-?\d+), orphaned (\d+), timewait (\d+)\)\n/.exec(text);
  assert.ok(total && tcp, `not ss -s output:\n${text}`);
  const transport = {} as Record<string, Row>;
  for (const name of ["RAW", "UDP", "TCP", "INET", "FRAG"]) {
    const m = new RegExp(`\\n${name}\\t  (\\d+) +(\\d+) +(\\d+) +\\n`).exec(text);
    assert.ok(m, `no ${name} row in:\n${text}`);
    transport[name.toLowerCase()] = { total: Number(m[1]), ip: Number(m[2]), ipv6: Number(m[3]) };
  }
  const [, t, estab, closed, orphaned, timewait] = tcp.map(Number);
  return {
    total: Number(total[1]),
    tcp: { total: t!, estab: estab!, closed: closed!, orphaned: orphaned!, timewait: timewait! },
    transport: transport as JsonSummary["transport"],
  };
}

describeAsRoot("ls -s: the summary ss -s prints", () => {
  let ns: ScratchNetns;
  let holder: Holder;
  let held: HeldSocket[];

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("summary");
    holder = await Holder.start({ netnsPath: ns.path });
    const [l4] = await holder.open({ kind: "listener", bind: { address: "127.0.0.1" } });
    const [l6] = await holder.open({ kind: "listener", bind: { address: "::1" } });
    assert.ok(l4 && l6);
    held = [
      l4,
      l6,
      ...(await holder.open({ kind: "connection", listener: l4.id }, 3)),
      ...(await holder.open({ kind: "connection", listener: l6.id })),
      ...(await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } }, 4)),
      ...(await holder.open({ kind: "udp", bind: { address: "::1" } }, 2)),
      ...(await holder.open({ kind: "raw", ipProtocol: 1 }, 2)),
      ...(await holder.open({ kind: "raw", ipProtocol: 58, family: "inet6" })),
      ...(await holder.open({ kind: "unix", type: "stream", name: "\0sdt-summary", listen: true })),
    ];
  });
  after(async () => {
    await holder?.stop();
    await ns?.remove();
  });

  /**
   * Run `mine` between two `ss -s` in the namespace until both ss runs print the same (the global
   * counters held still), then check sockdiag's output against that text.
   */
  async function againstSs(mine: () => Promise<string>, check: (ss: string, ours: string) => void) {
    const seen: string[] = [];
    for (let round = 0; round < 20; round++) {
      const first = await runSs(["-s"], ns.name);
      const ours = await mine();
      const second = await runSs(["-s"], ns.name);
      if (first === second) {
        check(first, ours);
        return;
      }
      seen.push(first, second);
    }
    assert.fail(`ss -s never printed the same twice in a row around sockdiag's run:\n${seen.join("\n")}`);
  }

  const run = async (args: string[]) => {
    const r = await sockdiag(args);
    assert.equal(r.code, 0, r.stderr);
    return r.stdout;
  };

  test("ls -s -N prints what ss -s prints there, byte for byte", async () => {
    await againstSs(
      () => run(["ls", "-s", "-N", ns.name]),
      (ss, ours) => assert.equal(ours, ss),
    );
  });

  test("the rows count the namespace's sockets: RAW, UDP and TCP per family, INET their sum, FRAG 0", async () => {
    const s = parseSsSummary(await run(["ls", "-s", "-N", ns.name]));
    const count = (protocol: string, family: string) =>
      held.filter((h) => h.protocol === protocol && h.family === family).length;
    const row = (protocol: string): Row => {
      const ip = count(protocol, "inet");
      const ipv6 = count(protocol, "inet6");
      return { total: ip + ipv6, ip, ipv6 };
    };
    const [raw, udp, tcp] = [row("raw"), row("udp"), row("tcp")];
    assert.deepEqual(s.transport, {
      raw,
      udp,
      tcp,
      inet: {
        total: raw.total + udp.total + tcp.total,
        ip: raw.ip + udp.ip + tcp.ip,
        ipv6: raw.ipv6 + udp.ipv6 + tcp.ipv6,
      },
      frag: { total: 0, ip: 0, ipv6: 0 },
    });
    // Every connection is established from both ends; nothing has closed.
    assert.equal(s.tcp.estab, held.filter((h) => h.protocol === "tcp" && h.state === "established").length);
    assert.equal(s.tcp.timewait, 0);
    assert.ok(s.total >= held.length, `Total ${s.total} counts the ${held.length} sockets held at least`);
  });

  test("-s -j gives the same numbers as JSON, and names the namespace", async () => {
    await againstSs(
      () => run(["ls", "-s", "-j", "-N", ns.name]),
      (ss, ours) => {
        const json = JSON.parse(ours) as JsonSummary;
        assert.equal(json.netns, ns.name);
        const { netns: _, ...numbers } = json;
        assert.deepEqual(numbers, parseSsSummary(ss));
      },
    );
  });

  test("--all-netns prints one summary per namespace, each after Netns: NAME; -j an array", async () => {
    await againstSs(
      () => run(["ls", "-s", "--all-netns"]),
      (ss, ours) => {
        const block = ours.split(/^Netns: /m).find((b) => b.startsWith(`${ns.name}\n`));
        assert.ok(block, `no block for ${ns.name} in:\n${ours}`);
        assert.equal(block.slice(ns.name.length + 1), ss);
        assert.ok(ours.startsWith("Netns: (host)\n"), "the caller's own namespace comes first");
      },
    );
    await againstSs(
      () => run(["ls", "-s", "-j", "--all-netns"]),
      (ss, ours) => {
        const all = JSON.parse(ours) as JsonSummary[];
        const mine = all.filter((s) => s.netns === ns.name);
        assert.equal(mine.length, 1);
        const { netns: _, ...numbers } = mine[0]!;
        assert.deepEqual(numbers, parseSsSummary(ss));
      },
    );
  });

  test("with a protocol flag or a filter the listing follows the summary, as in ss; not with -j", async () => {
    const r = await run(["ls", "-s", "-t", "-N", ns.name, "-H"]);
    const [summary, listing] = [
      r.slice(0, r.indexOf("FRAG")),
      r.slice(r.indexOf("\n\n", r.indexOf("FRAG")) + 2),
    ];
    assert.match(summary, /^Total: \d+\nTCP: /);
    const rows = listing.trimEnd().split("\n");
    assert.equal(rows.length, held.filter((h) => h.protocol === "tcp" && h.state === "established").length);
    assert.ok(
      rows.every((l) => l.startsWith("tcp ")),
      listing,
    );
    const alone = await run(["ls", "-s", "-a", "-N", ns.name]);
    assert.ok(alone.endsWith("FRAG\t  0         0         0        \n\n"), "-a alone: only the summary");
    const refused = await sockdiag(["ls", "-s", "-j", "-u", "-N", ns.name]);
    assert.equal(refused.code, 2);
    assert.match(refused.stderr, /-s with -j\/--ndjson prints the counters alone/);
  });
});
