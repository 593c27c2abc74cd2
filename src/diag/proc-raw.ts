/**
 * /proc/net/raw and /proc/net/raw6: the raw sockets of a namespace as the kernel prints them
 * (net/ipv4/raw.c raw_sock_seq_show, net/ipv6/datagram.c __ip6_dgram_sock_seq_show) — what ss lists
 * when the kernel has no raw_diag handler. One line per socket after a header:
 *
 *   sl local_address rem_address st tx_queue rx_queue tr tm->when retrnsmt uid timeout inode ref pointer drops
 *   86: 0100007F:0011 0200007F:0000 01 00000000:00000000 00:00000000 00000000 0 0 7606477 2 ... 0
 *
 * Addresses are the __be32 words printed with %08X, so in host byte order; ports (the socket's
 * protocol number, inet_num, and 0) are plain numbers. The file has no cookie, interface or
 * attribute: sockets from it have cookie 0 (the kernel's cookies start at 1) and ifindex 0.
 */
import { endianness } from "node:os";
import { DecodeError } from "../netlink/index.js";
import { addressText } from "./address.js";
import { InetSocket } from "./inet-socket.js";
import type { InetFamily, SocketNetns } from "./socket.js";
import { stateName } from "./states.js";

const LITTLE_ENDIAN = endianness() === "LE";
const words = new DataView(new ArrayBuffer(16));

/**
 * The sockets of one /proc/net/raw (`family` "inet") or raw6 ("inet6") text whose state is in the
 * bit mask `states` (1 << state), in file order. Throws DecodeError naming the line that does not
 * hold what the kernel prints.
 */
export function decodeProcRaw(
  text: string,
  family: InetFamily,
  states: number,
  netns: SocketNetns | undefined,
): InetSocket[] {
  const what = family === "inet" ? "/proc/net/raw" : "/proc/net/raw6";
  const sockets: InetSocket[] = [];
  const lines = text.split("\n");
  for (let n = 1; n < lines.length; n++) {
    const line = lines[n]!;
    if (line.trim() === "") continue;
    const f = line.trim().split(/\s+/);
    const bad = (detail: string) => new DecodeError(what, n, `line ${n + 1} "${line.trim()}": ${detail}`);
    if (f.length < 10) throw bad("fewer than 10 fields");
    const state = hex(f[3]!, bad);
    if ((states & (1 << state)) === 0) continue;
    const [src, sport] = endpoint(f[1]!, family, bad);
    const [dst, dport] = endpoint(f[2]!, family, bad);
    const [tx, rx] = pair(f[4]!, bad);
    const s = InetSocket.build({
      family,
      protocol: "raw",
      state: stateName(state),
      src,
      sport,
      dst,
      dport,
      cookie: 0n,
      inode: decimal(f[9]!, bad),
      uid: decimal(f[7]!, bad),
      rqueue: rx,
      wqueue: tx,
      netns,
      rawProtocol: sport,
    });
    sockets.push(s);
  }
  return sockets;
}

type Bad = (detail: string) => DecodeError;

/** "0100007F:0011" -> ["127.0.0.1", 17]. */
function endpoint(field: string, family: InetFamily, bad: Bad): [string, number] {
  const digits = family === "inet" ? 8 : 32;
  const colon = field.indexOf(":");
  if (colon !== digits) throw bad(`address "${field}" is not ${digits} hex digits and a port`);
  for (let i = 0; i < digits / 8; i++) {
    const word = hex(field.slice(i * 8, i * 8 + 8), bad);
    words.setUint32(i * 4, word, LITTLE_ENDIAN);
  }
  return [addressText(words, 0, family === "inet6"), hex(field.slice(colon + 1), bad)];
}

/** "00000000:00000100" (tx_queue:rx_queue) -> [0, 256]. */
function pair(field: string, bad: Bad): [number, number] {
  const colon = field.indexOf(":");
  if (colon < 0) throw bad(`"${field}" is not two hex numbers`);
  return [hex(field.slice(0, colon), bad), hex(field.slice(colon + 1), bad)];
}

function hex(text: string, bad: Bad): number {
  if (!/^[0-9A-Fa-f]{1,8}$/.test(text)) throw bad(`"${text}" is not a hex number`);
  return Number.parseInt(text, 16);
}

function decimal(text: string, bad: Bad): number {
  if (!/^[0-9]{1,10}$/.test(text)) throw bad(`"${text}" is not a number`);
  return Number(text);
}
