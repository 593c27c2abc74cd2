/**
 * A backend as the agent tracks it: one address, port and protocol of an EndpointSlice endpoint,
 * named by a stable key ("10.0.0.5:53/udp", "[fd00::5]:53/udp") so that the same endpoint met in
 * two slices, two Services or the state file is one entry.
 */
import { isIPv4, isIPv6, SocketAddress } from "node:net";

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
 * The canonical text of an address, or undefined when it is not an IP address (or carries a zone
 * id, "%eth0", which an EndpointSlice address cannot mean). IPv6 is printed as Node prints it
 * (RFC 5952: lowercase, shortest, "::" for the longest zero run), so "fd00:0::5" and "fd00::5" are
 * one backend; an IPv4-mapped IPv6 address ("::ffff:10.0.0.5",
 * "::FFFF:10.0.0.5", "0:0:0:0:0:ffff:a00:5") is its IPv4 address ("10.0.0.5"), because that is the
 * backend the library terminates for it: one backend, one key. Never throws.
 */
export function canonicalAddress(address: string): string | undefined {
  if (isIPv4(address)) return address;
  if (!isIPv6(address) || address.includes("%")) return undefined;
  const words = ipv6Words(address);
  // Not expected (isIPv6 accepted it): let Node's own parser and printer decide.
  if (words === undefined) {
    try {
      return mappedToIPv4(new SocketAddress({ address, family: "ipv6" }).address);
    } catch {
      return undefined;
    }
  }
  if (
    words[5] === 0xffff &&
    words[0] === 0 &&
    words[1] === 0 &&
    words[2] === 0 &&
    words[3] === 0 &&
    words[4] === 0
  )
    return dotted(words[6]!, words[7]!);
  return formatIPv6(words);
}

function mappedToIPv4(text: string): string {
  const v4 = text.startsWith("::ffff:") ? text.slice(7) : "";
  return isIPv4(v4) ? v4 : text;
}

function dotted(high: number, low: number): string {
  return `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;
}

/**
 * The eight 16-bit words of an address isIPv6 accepted, or undefined if it has an unexpected shape.
 * Done here rather than through SocketAddress, which costs ~3 µs an address: 100,000 IPv6 backends
 * in a list or a state file would otherwise hold the event loop for a third of a second.
 */
function ipv6Words(text: string): number[] | undefined {
  const groups: string[][] = text.split("::").map((half) => (half === "" ? [] : half.split(":")));
  if (groups.length > 2) return undefined;
  const words: number[][] = [];
  for (const half of groups) {
    const out: number[] = [];
    for (const group of half) {
      if (group.includes(".")) {
        if (!isIPv4(group)) return undefined;
        const [a, b, c, d] = group.split(".").map(Number) as [number, number, number, number];
        out.push((a << 8) | b, (c << 8) | d);
      } else out.push(Number.parseInt(group, 16));
    }
    words.push(out);
  }
  const [left = [], right] = words;
  const fill = 8 - left.length - (right?.length ?? 0);
  if (right === undefined ? fill !== 0 : fill < 1) return undefined;
  const all = right === undefined ? left : [...left, ...new Array<number>(fill).fill(0), ...right];
  return all.every((w) => Number.isInteger(w) && w >= 0 && w <= 0xffff) ? all : undefined;
}

/**
 * The text of eight words as libuv's inet_ntop (behind SocketAddress and the kernel's tools)
 * prints it: lowercase hex without leading zeros, the longest run of two or more zero words (the
 * first of equals) as "::", and an IPv4-compatible address (::a.b.c.d) in dotted form.
 */
function formatIPv6(words: readonly number[]): string {
  let base = -1;
  let len = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > len) [base, len] = [i, j - i];
    i = j;
  }
  if (len < 2) base = -1;
  if (base === 0 && len === 6) return `::${dotted(words[6]!, words[7]!)}`;
  let text = "";
  for (let i = 0; i < 8; i++) {
    if (base >= 0 && i >= base && i < base + len) {
      if (i === base) text += ":";
      continue;
    }
    if (i !== 0) text += ":";
    text += words[i]!.toString(16);
  }
  return base >= 0 && base + len === 8 ? `${text}:` : text;
}

/** The key of a backend: "10.0.0.5:53/udp", "[fd00::5]:53/udp". Never throws. */
export function backendKey(b: AgentBackend): string {
  const host = b.address.includes(":") ? `[${b.address}]` : b.address;
  return `${host}:${b.port}/${b.protocol}`;
}

/**
 * The backend a key names: the inverse of backendKey. Strict: undefined unless the key is exactly
 * the key backendKey prints for a valid backend — canonical address (IPv6 in brackets, IPv4 and
 * mapped addresses without), port 1–65535 in plain decimal, protocol "udp" or "tcp". Never throws.
 */
export function parseBackendKey(key: string): AgentBackend | undefined {
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
  return backendKey(backend) === key ? backend : undefined;
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
