/**
 * A backend as the agent tracks it: one address, port and protocol of an EndpointSlice endpoint,
 * named by a key that packs all three in one number (a bigint for IPv6) so that the same endpoint
 * met in two slices, two Services or the state file is one entry, and a million of them cost no
 * string each. Logs and the state file show a key as text ("10.0.0.5:53/udp", "[fd00::5]:53/udp").
 */
import { isIP } from "node:net";
import { checkBackend } from "sockdiag";

/** The protocols the agent acts on: EndpointSlice ports of other protocols (SCTP) are skipped. */
export type AgentProtocol = "udp" | "tcp";

/** An endpoint address, port and protocol; the address in canonical text. */
export interface AgentBackend {
  address: string;
  port: number;
  protocol: AgentProtocol;
}

/** Whether a value is a port the agent can act on: an integer from 1 to 65535. Never throws. */
export function isValidPort(n: unknown): n is number {
  return typeof n === "number" && Number.isInteger(n) && n >= 1 && n <= 65535;
}

/**
 * The canonical text of an address as the library terminates it (sockdiag's checkBackend: IPv6 as
 * RFC 5952 prints it, so "fd00:0::5" and "fd00::5" are one backend; "::ffff:10.0.0.5" is the IPv4
 * backend "10.0.0.5"), or undefined when it is not an IP address, carries a zone id ("%eth0",
 * which an EndpointSlice address cannot mean) or is no backend's address (unspecified or
 * broadcast: 0.0.0.0, ::, 255.255.255.255, which the library refuses): one backend, one key. Never
 * throws.
 */
export function canonicalAddress(address: string): string | undefined {
  if (isIP(address) === 0) return undefined;
  try {
    return checkBackend(address, 1).address;
  } catch {
    return undefined;
  }
}

/**
 * A backend's identity: an IPv4 backend as the number address x 2^17 + port x 2 + protocol (tcp 1,
 * udp 0; under 2^49, exact), an IPv6 one as the bigint of the same over its 128-bit address. Each
 * backend has one canonical address, so equal backends have equal keys and no two backends share
 * one; Map and Set compare numbers and bigints by value, and a number never equals a bigint.
 */
export type BackendKey = number | bigint;

/** 2^17: the room for a port (16 bits) and the protocol (1 bit) below the address. */
const ADDRESS_UNIT = 131072;

/**
 * The key of a backend whose address is canonical (canonicalAddress; AgentBackend's contract).
 * Throws a RangeError on an address that is not canonical, so that no backend gets a second key.
 */
export function backendKey(b: AgentBackend): BackendKey {
  const low = b.port * 2 + (b.protocol === "tcp" ? 1 : 0);
  const v4 = ipv4Value(b.address);
  if (v4 !== undefined) return v4 * ADDRESS_UNIT + low;
  const v6 = ipv6Value(b.address);
  if (v6 === undefined) throw new RangeError(`not a canonical backend address: ${b.address}`);
  return (v6 << 17n) | BigInt(low);
}

/** The backend a key names: the inverse of backendKey. */
export function backendOf(key: BackendKey): AgentBackend {
  if (typeof key === "number") {
    const low = key % ADDRESS_UNIT;
    return { address: ipv4Text((key - low) / ADDRESS_UNIT), port: low >>> 1, protocol: protocolOf(low) };
  }
  const low = Number(key & 131071n);
  return { address: ipv6Text(key >> 17n), port: low >>> 1, protocol: protocolOf(low) };
}

/** A key as logs and the state file show it: "10.0.0.5:53/udp", "[fd00::5]:53/udp". */
export function keyText(key: BackendKey): string {
  if (typeof key !== "number") return backendText(backendOf(key));
  // The state file prints every key: no backend object on the way.
  const low = key % ADDRESS_UNIT;
  return `${ipv4Text((key - low) / ADDRESS_UNIT)}:${low >>> 1}/${protocolOf(low)}`;
}

/** A backend as text: "10.0.0.5:53/udp", "[fd00::5]:53/udp". Never throws. */
export function backendText(b: AgentBackend): string {
  const host = b.address.includes(":") ? `[${b.address}]` : b.address;
  return `${host}:${b.port}/${b.protocol}`;
}

/** The key a text names (parseBackendText), or undefined. Never throws. */
export function parseKeyText(text: string): BackendKey | undefined {
  const backend = parseBackendText(text);
  return backend && backendKey(backend);
}

/**
 * The backend a text names: the inverse of backendText. Strict: undefined unless the text is
 * exactly what backendText prints for a valid backend — canonical address (IPv6 in brackets, IPv4
 * and mapped addresses without), port 1–65535 in plain decimal, protocol "udp" or "tcp". Never throws.
 */
export function parseBackendText(key: string): AgentBackend | undefined {
  if (typeof key !== "string") return undefined;
  const slash = key.lastIndexOf("/");
  const colon = key.lastIndexOf(":", slash);
  if (slash < 0 || colon < 1) return undefined;
  const protocol = key.slice(slash + 1);
  if (protocol !== "udp" && protocol !== "tcp") return undefined;
  const portText = key.slice(colon + 1, slash);
  // Digits only, so that Number() cannot accept "0x35", " 53", "5e1" or "".
  if (!/^[1-9][0-9]{0,4}$/.test(portText)) return undefined;
  const port = Number(portText);
  if (!isValidPort(port)) return undefined;
  let host = key.slice(0, colon);
  if (host.startsWith("[")) {
    if (!host.endsWith("]")) return undefined;
    host = host.slice(1, -1);
  }
  const address = canonicalAddress(host);
  if (address === undefined) return undefined;
  const backend: AgentBackend = { address, port, protocol };
  // Catches every other spelling: non-canonical IPv6, brackets missing or around IPv4, mapped forms.
  return backendText(backend) === key ? backend : undefined;
}

/**
 * Checks a value read from outside (a version 1 state file) and returns it as a backend with its
 * address made canonical, or undefined. Never throws.
 */
export function asBackend(value: unknown): AgentBackend | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { address, port, protocol } = value as Record<string, unknown>;
  if (typeof address !== "string" || !isValidPort(port)) return undefined;
  if (protocol !== "udp" && protocol !== "tcp") return undefined;
  const canonical = canonicalAddress(address);
  if (canonical === undefined) return undefined;
  return { address: canonical, port, protocol };
}

function protocolOf(low: number): AgentProtocol {
  return (low & 1) === 1 ? "tcp" : "udp";
}

/** The 32-bit value of a dotted quad in canonical form ("10.0.0.5"), or undefined. */
function ipv4Value(address: string): number | undefined {
  let value = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = 0; i < address.length; i++) {
    const c = address.charCodeAt(i);
    if (c === 0x2e) {
      if (digits === 0 || ++dots > 3) return undefined;
      value = value * 256 + part;
      part = 0;
      digits = 0;
      continue;
    }
    // A digit, and no leading zero.
    if (c < 0x30 || c > 0x39 || (digits === 1 && part === 0)) return undefined;
    part = part * 10 + (c - 0x30);
    if (++digits > 3 || part > 255) return undefined;
  }
  return dots === 3 && digits > 0 ? value * 256 + part : undefined;
}

function ipv4Text(value: number): string {
  return `${value >>> 24}.${(value >>> 16) & 255}.${(value >>> 8) & 255}.${value & 255}`;
}

/**
 * The 128-bit value of an IPv6 address in canonical text (RFC 5952, as canonicalAddress prints it;
 * the IPv4-compatible form ends in a dotted quad), or undefined for any other text.
 */
function ipv6Value(address: string): bigint | undefined {
  if (canonicalAddress(address) !== address || !address.includes(":")) return undefined;
  let text = address;
  const dotted = /[^:]*\.[^:]*$/.exec(text);
  if (dotted) {
    const v4 = ipv4Value(dotted[0])!;
    text = `${text.slice(0, dotted.index)}${(v4 >>> 16).toString(16)}:${(v4 & 0xffff).toString(16)}`;
  }
  const [head, tail] = text.split("::") as [string, string | undefined];
  const groupsOf = (part: string | undefined) => (part ? part.split(":") : []);
  const before = groupsOf(head);
  const after = groupsOf(tail);
  const groups =
    tail === undefined ? before : [...before, ...Array(8 - before.length - after.length).fill("0"), ...after];
  let value = 0n;
  for (const group of groups) value = (value << 16n) | BigInt(Number.parseInt(group, 16));
  return value;
}

/** The canonical text of a 128-bit IPv6 value. */
function ipv6Text(value: bigint): string {
  const groups: string[] = [];
  for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
  return canonicalAddress(groups.join(":"))!;
}
