/**
 * A backend as the agent tracks it: one address, port and protocol of an EndpointSlice endpoint,
 * named by a stable key ("10.0.0.5:53/udp", "[fd00::5]:53/udp") so that the same endpoint met in
 * two slices, two Services or the state file is one entry.
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
