/**
 * Conntrack for tests: entries created in a namespace's table in batches through ctnetlink
 * (IPCTNL_MSG_CT_NEW with NLM_F_CREATE, built by the independent test builder — `conntrack -I`
 * takes one process per entry, too slow for tens of thousands), and conntrack-tools as the oracle
 * (`conntrack -L` / `conntrack -D` run inside the namespace), with its output parsed into keys that
 * can be compared with sockdiag's entries.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import type { ConntrackEntry } from "../../src/ctnl/index.js";
import { collectErrors, MessageWriter, NetlinkSocket, writeBarrier } from "../../src/netlink/index.js";
import { fromPath, runIn } from "../../src/netns/index.js";
import { entryAttributes, familyOf, nfgenmsg, T, type TestEntry } from "../ctnl/ct-layout.js";
import { nlmsg } from "../diag/layout.js";

const run = promisify(execFile);
const NETLINK_NETFILTER = 12;
const NLM_F_REQUEST = 1;
const NLM_F_EXCL = 0x200;
const NLM_F_CREATE = 0x400;
const PER_WRITE = 512;

/**
 * Create `entries` in the conntrack table of the namespace pinned at `path` (timeout default 600 s).
 * Throws on the first entry the kernel refuses.
 */
export function insertConntrack(path: string, entries: readonly TestEntry[]): void {
  using ns = fromPath(path);
  using conn = runIn(ns, () => NetlinkSocket.open(NETLINK_NETFILTER));
  const w = new MessageWriter(Buffer.alloc(PER_WRITE * 256 + 16));
  for (let i = 0; i < entries.length; i += PER_WRITE) {
    const batch = entries.slice(i, i + PER_WRITE);
    w.reset();
    const first = conn.nextSeq();
    batch.forEach((e, j) => {
      const seq = j === 0 ? first : conn.nextSeq();
      const msg = nlmsg(
        { type: T.NEW, flags: NLM_F_REQUEST | NLM_F_CREATE | NLM_F_EXCL, seq },
        nfgenmsg(familyOf(e)),
        ...entryAttributes({ ...e, id: undefined, timeout: e.timeout ?? 600 }).filter((a) => a.length > 0),
      );
      msg.copy(w.buf, w.length);
      w.length += msg.length;
    });
    const barrier = conn.nextSeq();
    writeBarrier(w, barrier);
    conn.send(w.buf, w.length);
    const failures: string[] = [];
    collectErrors(conn, first, batch.length, barrier, "conntrack insert", (index, errno) => {
      failures.push(`${JSON.stringify(batch[index])}: errno ${errno}`);
    });
    if (failures.length > 0)
      throw new Error(`cannot create conntrack entries: ${failures.slice(0, 3).join("; ")}`);
  }
}

/** Run `conntrack ARGS...` inside namespace `name`; resolves with stdout and stderr, whatever the exit code. */
export async function conntrackTool(
  name: string,
  args: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run("ip", ["netns", "exec", name, "conntrack", ...args], {
      maxBuffer: 1 << 28,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw err;
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/**
 * The entries `conntrack -L` printed, as keys: "proto src dst sport dport > src dst sport dport"
 * (both tuples, in conntrack's own text for addresses; ICMP type, code and id in place of ports),
 * then " zone N" for an entry outside zone 0. Lines without two tuples are left out.
 */
export function conntrackKeys(stdout: string): string[] {
  const keys: string[] = [];
  for (const line of stdout.split("\n")) {
    const proto = /^(\S+)\s+\d+\s/.exec(line)?.[1];
    const fields = [...line.matchAll(/\b(src|dst|sport|dport|type|code|id)=(\S+)/g)].map((m) => m[2]!);
    if (!proto || fields.length < 4) continue;
    const half = fields.length / 2;
    const zone = /\bzone=([1-9]\d*)/.exec(line)?.[1];
    keys.push(
      `${proto} ${fields.slice(0, half).join(" ")} > ${fields.slice(half).join(" ")}${zone ? ` zone ${zone}` : ""}`,
    );
  }
  return keys.sort();
}

/** The same key for a sockdiag entry. */
export function entryKey(e: ConntrackEntry): string {
  const t = (x: ConntrackEntry["original"]) =>
    [
      x.src,
      x.dst,
      ...(x.sport !== undefined ? [x.sport, x.dport] : []),
      ...(x.icmpType !== undefined ? [x.icmpType, x.icmpCode, x.icmpId] : []),
    ].join(" ");
  return `${e.protocol} ${t(e.original)} > ${t(e.reply)}${e.zone !== 0 ? ` zone ${e.zone}` : ""}`;
}

/** Keys of sockdiag entries, sorted like conntrackKeys. */
export function entryKeys(entries: readonly ConntrackEntry[]): string[] {
  return entries.map(entryKey).sort();
}
