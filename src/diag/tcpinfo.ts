/**
 * struct tcp_info (INET_DIAG_INFO for TCP), from /usr/include/linux/tcp.h. The kernel sends as many
 * bytes as it knows; older kernels send a shorter struct and newer ones a longer one. Fields past the
 * end of what was sent are left out; bytes past the last field we know are ignored.
 */
import { DecodeError } from "../netlink/index.js";

/**
 * INET_DIAG_INFO for TCP: struct tcp_info (linux/tcp.h, tcpi_ names in camelCase), as far as the
 * kernel sent it. Older kernels send a shorter struct: the fields they did not send are absent.
 * 64-bit counters are bigints.
 */
export type TcpInfo = Partial<TcpInfoFields>;

/** Every field of struct tcp_info sockdiag decodes. */
export interface TcpInfoFields {
  state: number;
  caState: number;
  retransmits: number;
  probes: number;
  backoff: number;
  options: number;
  sndWscale: number;
  rcvWscale: number;
  deliveryRateAppLimited: number;
  fastopenClientFail: number;
  rto: number;
  ato: number;
  sndMss: number;
  rcvMss: number;
  unacked: number;
  sacked: number;
  lost: number;
  retrans: number;
  fackets: number;
  lastDataSent: number;
  lastAckSent: number;
  lastDataRecv: number;
  lastAckRecv: number;
  pmtu: number;
  rcvSsthresh: number;
  rtt: number;
  rttvar: number;
  sndSsthresh: number;
  sndCwnd: number;
  advmss: number;
  reordering: number;
  rcvRtt: number;
  rcvSpace: number;
  totalRetrans: number;
  pacingRate: bigint;
  maxPacingRate: bigint;
  bytesAcked: bigint;
  bytesReceived: bigint;
  segsOut: number;
  segsIn: number;
  notsentBytes: number;
  minRtt: number;
  dataSegsIn: number;
  dataSegsOut: number;
  deliveryRate: bigint;
  busyTime: bigint;
  rwndLimited: bigint;
  sndbufLimited: bigint;
  delivered: number;
  deliveredCe: number;
  bytesSent: bigint;
  bytesRetrans: bigint;
  dsackDups: number;
  reordSeen: number;
  rcvOoopack: number;
  sndWnd: number;
}

type TcpInfoField = Exclude<
  keyof TcpInfoFields,
  "sndWscale" | "rcvWscale" | "deliveryRateAppLimited" | "fastopenClientFail"
>;

type Field = readonly [name: TcpInfoField | "wscale" | "flags7", size: 1 | 4 | 8];

// Byte 6 and 7 are bit fields, decoded separately below.
const LAYOUT: readonly Field[] = [
  ["state", 1],
  ["caState", 1],
  ["retransmits", 1],
  ["probes", 1],
  ["backoff", 1],
  ["options", 1],
  ["wscale", 1],
  ["flags7", 1],
  ["rto", 4],
  ["ato", 4],
  ["sndMss", 4],
  ["rcvMss", 4],
  ["unacked", 4],
  ["sacked", 4],
  ["lost", 4],
  ["retrans", 4],
  ["fackets", 4],
  ["lastDataSent", 4],
  ["lastAckSent", 4],
  ["lastDataRecv", 4],
  ["lastAckRecv", 4],
  ["pmtu", 4],
  ["rcvSsthresh", 4],
  ["rtt", 4],
  ["rttvar", 4],
  ["sndSsthresh", 4],
  ["sndCwnd", 4],
  ["advmss", 4],
  ["reordering", 4],
  ["rcvRtt", 4],
  ["rcvSpace", 4],
  ["totalRetrans", 4],
  ["pacingRate", 8],
  ["maxPacingRate", 8],
  ["bytesAcked", 8],
  ["bytesReceived", 8],
  ["segsOut", 4],
  ["segsIn", 4],
  ["notsentBytes", 4],
  ["minRtt", 4],
  ["dataSegsIn", 4],
  ["dataSegsOut", 4],
  ["deliveryRate", 8],
  ["busyTime", 8],
  ["rwndLimited", 8],
  ["sndbufLimited", 8],
  ["delivered", 4],
  ["deliveredCe", 4],
  ["bytesSent", 8],
  ["bytesRetrans", 8],
  ["dsackDups", 4],
  ["reordSeen", 4],
  ["rcvOoopack", 4],
  ["sndWnd", 4],
];

// Offsets with C's natural alignment, computed once.
const OFFSETS: readonly number[] = (() => {
  const out: number[] = [];
  let o = 0;
  for (const [, size] of LAYOUT) {
    o = Math.ceil(o / size) * size;
    out.push(o);
    o += size;
  }
  return out;
})();

/** The size of struct tcp_info as this table knows it. */
export const TCP_INFO_KNOWN_SIZE = (OFFSETS.at(-1) ?? 0) + 4;

/** decodeTcpInfo reads the fields that lie entirely within buf[offset, offset + length). */
export function decodeTcpInfo(buf: Buffer, offset: number, length: number): TcpInfo {
  if (offset < 0 || length < 0 || offset + length > buf.length) {
    throw new DecodeError("tcp_info", offset, `${length} bytes do not fit in a ${buf.length}-byte buffer`);
  }
  const info: TcpInfo = {};
  for (let i = 0; i < LAYOUT.length; i++) {
    const [name, size] = LAYOUT[i]!;
    const at = OFFSETS[i]!;
    if (at + size > length) break;
    const o = offset + at;
    if (name === "wscale") {
      const byte = buf[o]!;
      info.sndWscale = byte & 0x0f;
      info.rcvWscale = byte >> 4;
    } else if (name === "flags7") {
      const byte = buf[o]!;
      info.deliveryRateAppLimited = byte & 1;
      info.fastopenClientFail = (byte >> 1) & 3;
    } else {
      (info as Record<string, number | bigint>)[name] =
        size === 1 ? buf[o]! : size === 4 ? buf.readUInt32LE(o) : buf.readBigUInt64LE(o);
    }
  }
  return info;
}
