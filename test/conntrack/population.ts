/** A mixed conntrack table for the kernel tests: DNATed UDP, TCP, IPv6, marked entries. */
import type { TestEntry } from "../ctnl/ct-layout.js";

/** Entries whose addresses no other test uses (10.61.x, fd61::), so a shared host table cannot interfere. */
export function mixedTable(): TestEntry[] {
  const out: TestEntry[] = [];
  for (let i = 0; i < 40; i++) {
    const src = `10.61.1.${(i % 4) + 1}`;
    out.push({
      proto: 17,
      orig: { src, dst: `10.61.96.${(i % 3) + 1}`, sport: 20000 + i, dport: 53 },
      reply: { src: `10.61.244.${(i % 5) + 1}`, dst: src, sport: 5353, dport: 20000 + i },
    });
  }
  for (let i = 0; i < 10; i++)
    out.push({
      proto: 6,
      orig: { src: "10.61.1.9", dst: "10.61.96.1", sport: 30000 + i, dport: 80 },
      tcpState: 3,
    });
  for (let i = 0; i < 10; i++)
    out.push({
      proto: 17,
      orig: { src: "fd61::1", dst: "fd61::53", sport: 40000 + i, dport: 53 },
      reply: { src: `fd61::a${i % 2}`, dst: "fd61::1", sport: 53, dport: 40000 + i },
    });
  for (let i = 0; i < 5; i++)
    out.push({
      proto: 17,
      orig: { src: "10.61.1.8", dst: "10.61.96.9", sport: 50000 + i, dport: 9 },
      mark: 7,
    });
  return out;
}

/** One selection in both languages: sockdiag's query and conntrack-tools' flags. */
export interface Selection {
  name: string;
  query: Record<string, unknown>;
  args: string[];
}

export const SELECTIONS: readonly Selection[] = [
  { name: "protocol udp", query: { protocol: "udp" }, args: ["-p", "udp"] },
  { name: "family inet6", query: { family: "inet6" }, args: ["-f", "ipv6"] },
  { name: "original source", query: { original: { src: "10.61.1.2" } }, args: ["--orig-src", "10.61.1.2"] },
  {
    name: "reply source and port (a DNATed backend)",
    query: { protocol: "udp", reply: { src: "10.61.244.3", sport: 5353 } },
    args: ["-p", "udp", "--reply-src", "10.61.244.3", "--reply-port-src", "5353"],
  },
  {
    name: "IPv6 UDP destination port",
    query: { family: "inet6", protocol: "udp", original: { dport: 53 } },
    args: ["-f", "ipv6", "-p", "udp", "--dport", "53"],
  },
  { name: "mark", query: { mark: 7 }, args: ["-m", "7"] },
  {
    name: "TCP original destination and port",
    query: { protocol: "tcp", original: { dst: "10.61.96.1", dport: 80 } },
    args: ["-p", "tcp", "--orig-dst", "10.61.96.1", "--dport", "80"],
  },
  {
    name: "IPv6 reply source",
    query: { reply: { src: "fd61::a1" } },
    args: ["-f", "ipv6", "--reply-src", "fd61::a1"],
  },
  {
    name: "original destination, both tuples",
    query: { original: { dst: "10.61.96.2" }, reply: { src: "10.61.244.2" } },
    args: ["--orig-dst", "10.61.96.2", "--reply-src", "10.61.244.2"],
  },
];

/**
 * Zoned and ICMP entries (10.63.x, fd63::): the same UDP tuples in zones 0, 5 and 7 (a zone is
 * part of an entry's identity), ICMP echoes in zones 0 and 5, and ICMPv6 echoes.
 */
export function zoneIcmpTable(): TestEntry[] {
  const out: TestEntry[] = [];
  for (const zone of [0, 5, 7])
    for (let i = 0; i < 6; i++)
      out.push({
        proto: 17,
        orig: { src: "10.63.1.1", dst: "10.63.96.1", sport: 21000 + i, dport: 5300 },
        ...(zone !== 0 ? { zone } : {}),
      });
  for (let i = 0; i < 6; i++)
    out.push({
      proto: 1,
      orig: { src: `10.63.2.${(i % 2) + 1}`, dst: "10.63.96.2", icmp: { type: 8, code: 0, id: 100 + i } },
    });
  for (let i = 0; i < 2; i++)
    out.push({
      proto: 1,
      orig: { src: "10.63.2.1", dst: "10.63.96.2", icmp: { type: 8, code: 0, id: 100 + i } },
      zone: 5,
    });
  for (let i = 0; i < 4; i++)
    out.push({
      proto: 58,
      orig: { src: "fd63::1", dst: "fd63::2", icmp: { type: 128, code: 0, id: 200 + i } },
    });
  return out;
}

export const ZONE_ICMP_SELECTIONS: readonly Selection[] = [
  { name: "zone 5", query: { zone: 5 }, args: ["-w", "5"] },
  {
    name: "zone 7, UDP destination port",
    query: { zone: 7, protocol: "udp", original: { dport: 5300 } },
    args: ["-w", "7", "-p", "udp", "--dport", "5300"],
  },
  {
    name: "zone 0, original source",
    query: { zone: 0, original: { src: "10.63.1.1" } },
    args: ["-w", "0", "--orig-src", "10.63.1.1"],
  },
  { name: "protocol icmp", query: { protocol: "icmp" }, args: ["-p", "icmp"] },
  { name: "ICMP in zone 5", query: { protocol: "icmp", zone: 5 }, args: ["-p", "icmp", "-w", "5"] },
  {
    name: "ICMP original source",
    query: { protocol: "icmp", original: { src: "10.63.2.2" } },
    args: ["-p", "icmp", "--orig-src", "10.63.2.2"],
  },
  {
    name: "ICMP reply destination",
    query: { protocol: "icmp", reply: { dst: "10.63.2.1" } },
    args: ["-p", "icmp", "--reply-dst", "10.63.2.1"],
  },
  {
    name: "ICMPv6",
    query: { family: "inet6", protocol: "icmpv6" },
    args: ["-f", "ipv6", "-p", "icmpv6"],
  },
];
