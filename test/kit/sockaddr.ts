/**
 * Socket address codecs for the test kit: `struct sockaddr_in` (netinet/in.h), `struct sockaddr_in6`
 * (linux/in6.h) and `struct sockaddr_un` (linux/un.h), encoded for bind(2)/connect(2) and decoded from
 * getsockname(2). They live on the test side because only the holder child creates sockets by address.
 */
import { isIPv4, isIPv6 } from "node:net";
import { formatIPv4, formatIPv6 } from "../../src/diag/address.js";
import type { InetFamily } from "../../src/diag/socket.js";
import { AF_INET, AF_INET6, AF_UNIX } from "../../src/sys/index.js";

export type { InetFamily };

/** An inet endpoint: address text (IPv4 dotted quad or IPv6, no brackets, no zone) and port. */
export interface Endpoint {
  address: string;
  port: number;
}

/** What getsockname(2) reported, decoded. A unix name is in ss notation: path, "@abstract" or "*". */
export type DecodedSockaddr =
  | { family: InetFamily; address: string; port: number }
  | { family: "unix"; name: string };

/** SockaddrError names an address or port the kit cannot encode. */
export class SockaddrError extends Error {
  override readonly name = "SockaddrError";
}

/** `sizeof(struct sockaddr_in)`. */
export const SOCKADDR_IN_SIZE = 16;
/** `sizeof(struct sockaddr_in6)`. */
export const SOCKADDR_IN6_SIZE = 28;
/** `sizeof(struct sockaddr_un)`: sa_family_t then `char sun_path[108]`. */
export const SOCKADDR_UN_SIZE = 110;
const UNIX_PATH_MAX = 108;

/** familyOf tells which family an address text belongs to, or throws SockaddrError naming it. */
export function familyOf(address: string): InetFamily {
  if (isIPv4(address)) return "inet";
  if (isIPv6(address) && !address.includes("%")) return "inet6";
  throw new SockaddrError(`not an IPv4 or IPv6 address (zones not supported): ${JSON.stringify(address)}`);
}

/** parseIPv4 returns the 4 network-order bytes of a dotted quad. */
export function parseIPv4(address: string): Buffer {
  if (!isIPv4(address)) throw new SockaddrError(`not an IPv4 address: ${JSON.stringify(address)}`);
  return Buffer.from(address.split(".").map(Number));
}

/** parseIPv6 returns the 16 network-order bytes of an IPv6 text, including "::" and a dotted tail. */
export function parseIPv6(address: string): Buffer {
  if (familyOf(address) !== "inet6")
    throw new SockaddrError(`not an IPv6 address: ${JSON.stringify(address)}`);
  let text = address;
  const tail = text.slice(text.lastIndexOf(":") + 1);
  if (tail.includes(".")) {
    const v4 = parseIPv4(tail);
    text = `${text.slice(0, text.length - tail.length)}${v4.readUInt16BE(0).toString(16)}:${v4.readUInt16BE(2).toString(16)}`;
  }
  const [head = "", rest] = text.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = rest === undefined || rest === "" ? [] : rest.split(":");
  const groups = [...left, ...new Array<string>(8 - left.length - right.length).fill("0"), ...right];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => {
    out.writeUInt16BE(Number.parseInt(g, 16), i * 2);
  });
  return out;
}

/** v4Mapped returns ::ffff:a.b.c.d for an IPv4 text, the form an AF_INET6 socket uses for it. */
export function v4Mapped(ipv4: string): string {
  parseIPv4(ipv4);
  return `::ffff:${ipv4}`;
}

/** canonicalAddress renders an address the way the kernel's peers (and sockdiag, and ss) print it. */
export function canonicalAddress(address: string): string {
  if (familyOf(address) === "inet") return address;
  const b = parseIPv6(address);
  return formatIPv6(b.readUInt32BE(0), b.readUInt32BE(4), b.readUInt32BE(8), b.readUInt32BE(12));
}

function checkPort(port: number): void {
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new SockaddrError(`bad port: ${port}`);
}

/** sockaddrIn encodes `struct sockaddr_in`: host-order family, network-order port and address. */
export function sockaddrIn(address: string, port: number): Buffer {
  checkPort(port);
  const b = Buffer.alloc(SOCKADDR_IN_SIZE);
  b.writeUInt16LE(AF_INET, 0);
  b.writeUInt16BE(port, 2);
  parseIPv4(address).copy(b, 4);
  return b;
}

/** sockaddrIn6 encodes `struct sockaddr_in6` with flowinfo and scope id 0; IPv4 text becomes v4-mapped. */
export function sockaddrIn6(address: string, port: number): Buffer {
  checkPort(port);
  const b = Buffer.alloc(SOCKADDR_IN6_SIZE);
  b.writeUInt16LE(AF_INET6, 0);
  b.writeUInt16BE(port, 2);
  parseIPv6(isIPv4(address) ? v4Mapped(address) : address).copy(b, 8);
  return b;
}

/** sockaddrInet encodes an endpoint for a socket of `family`. */
export function sockaddrInet(family: InetFamily, address: string, port: number): Buffer {
  return family === "inet" ? sockaddrIn(address, port) : sockaddrIn6(address, port);
}

/**
 * sockaddrUn encodes `struct sockaddr_un` for `name`: a path (NUL-terminated), or an abstract name
 * given with its leading NUL ("\0name"), whose length is exact because every byte of it counts.
 */
export function sockaddrUn(name: string): Buffer {
  const path = Buffer.from(name);
  const abstract = path[0] === 0;
  if (path.length === 0 || path.length + (abstract ? 0 : 1) > UNIX_PATH_MAX) {
    throw new SockaddrError(`bad unix socket name (1..107 bytes): ${JSON.stringify(name)}`);
  }
  const b = Buffer.alloc(2 + path.length + (abstract ? 0 : 1));
  b.writeUInt16LE(AF_UNIX, 0);
  path.copy(b, 2);
  return b;
}

/** unixDisplayName gives a unix name in ss notation: abstract "\0x" as "@x", unnamed as "*". */
export function unixDisplayName(name: string | undefined): string {
  if (name === undefined || name === "") return "*";
  return name[0] === "\0" ? `@${name.slice(1)}` : name;
}

/** decodeSockaddr reads the first `len` bytes of a sockaddr that getsockname(2) filled in. */
export function decodeSockaddr(b: Buffer, len: number): DecodedSockaddr {
  const family = b.readUInt16LE(0);
  if (family === AF_INET)
    return { family: "inet", address: formatIPv4(b.readUInt32BE(4)), port: b.readUInt16BE(2) };
  if (family === AF_INET6) {
    const address = formatIPv6(b.readUInt32BE(8), b.readUInt32BE(12), b.readUInt32BE(16), b.readUInt32BE(20));
    return { family: "inet6", address, port: b.readUInt16BE(2) };
  }
  if (family === AF_UNIX) {
    if (len <= 2) return { family: "unix", name: "*" };
    if (b[2] === 0) return { family: "unix", name: `@${b.toString("latin1", 3, len)}` };
    const end = b.indexOf(0, 2);
    return { family: "unix", name: b.toString("utf8", 2, end < 0 || end > len ? len : end) };
  }
  throw new SockaddrError(`unexpected address family ${family} from getsockname`);
}
