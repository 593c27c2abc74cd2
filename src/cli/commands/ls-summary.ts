/**
 * `ls -s`: what `ss -s` prints (misc/ss.c print_summary), from the same counters it reads — the
 * namespace's /proc/net/sockstat, sockstat6 and snmp, read by a thread inside it — in ss's layout,
 * or as JSON with the same numbers. Some counters are the kernel's, not the namespace's: TCP's
 * alloc (the TCP total) and orphan count every namespace, as they do for ss.
 */
import {
  inNetns,
  type NamespaceFailure,
  type NamespaceNote,
  type NamespaceSelection,
  readSnmpCounter,
  readSockstatFields,
  type SockstatFields,
  targetLabel,
  targetsOf,
} from "../../netns/index.js";
import { recordOrThrow } from "../../run/index.js";

/** One Transport row: IPv4 and IPv6 sockets and their sum. */
export interface TransportCounts {
  total: number;
  ip: number;
  ipv6: number;
}

/** The numbers of `ss -s` for one namespace. */
export interface Summary {
  /** The namespace, as ls -j names it ("(host)": the caller's own). */
  netns: string;
  /** "Total:": sockets in use in the namespace (sockstat "sockets: used"). */
  total: number;
  /** The "TCP:" line, computed as ss does. */
  tcp: { total: number; estab: number; closed: number; orphaned: number; timewait: number };
  /** The Transport table. */
  transport: Record<"raw" | "udp" | "tcp" | "inet" | "frag", TransportCounts>;
}

/** The summaries of the namespaces of `selection`, in walk order, and the walk's findings. */
export interface Summaries {
  summaries: Summary[];
  failures: NamespaceFailure[];
  notes: NamespaceNote<string>[];
}

/** Read the counters of every namespace `selection` names; one that fails is recorded (with "all"). */
export function readSummaries(selection: NamespaceSelection): Summaries {
  const out: Summaries = { summaries: [], failures: [], notes: [] };
  for (const target of targetsOf(selection, { failures: out.failures, notes: out.notes })) {
    try {
      const counters = inNetns(target.netns, () => ({
        fields: readSockstatFields(),
        estab: readSnmpCounter("Tcp", "CurrEstab") ?? 0,
      }));
      out.summaries.push(summaryOf(targetLabel(target), counters.fields, counters.estab));
    } catch (err) {
      recordOrThrow(selection.netns, target, err, out.failures);
    }
  }
  return out;
}

/** ss's arithmetic over the counters (print_summary, get_sockstat_line). */
export function summaryOf(netns: string, fields: SockstatFields, estab: number): Summary {
  const n = (line: string, field: string) => fields.get(line)?.get(field) ?? 0;
  const row = (v4: number, v6: number): TransportCounts => ({ total: v4 + v6, ip: v4, ipv6: v6 });
  const tcp4 = n("TCP", "inuse");
  const tcp6 = n("TCP6", "inuse");
  const alloc = n("TCP", "alloc");
  const tw = n("TCP", "tw");
  const raw = row(n("RAW", "inuse"), n("RAW6", "inuse"));
  const udp = row(n("UDP", "inuse"), n("UDP6", "inuse"));
  const tcp = row(tcp4, tcp6);
  return {
    netns,
    total: n("sockets", "used"),
    tcp: {
      total: alloc + tw,
      estab,
      closed: alloc - (tcp4 + tcp6 - tw),
      orphaned: n("TCP", "orphan"),
      timewait: tw,
    },
    transport: {
      raw,
      udp,
      tcp,
      inet: row(raw.ip + udp.ip + tcp.ip, raw.ipv6 + udp.ipv6 + tcp.ipv6),
      frag: row(n("FRAG", "inuse"), n("FRAG6", "inuse")),
    },
  };
}

/** The summary in ss's layout, byte for byte (a tab after each row name, columns as %-9d). */
export function formatSummary(s: Summary): string {
  const t = s.tcp;
  const lines = [
    `Total: ${s.total}`,
    `TCP:   ${t.total} (estab ${t.estab}, closed ${t.closed}, orphaned ${t.orphaned}, timewait ${t.timewait})`,
    "",
    "Transport Total     IP        IPv6",
  ];
  for (const [name, r] of Object.entries(s.transport))
    lines.push(
      `${name.toUpperCase()}\t  ${[r.total, r.ip, r.ipv6].map((v) => String(v).padEnd(9)).join(" ")}`,
    );
  return `${lines.join("\n")}\n\n`;
}
