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

/**
 * The canonical text of an address (IPv6 as RFC 5952 prints it, so "fd00:0::5" and "fd00::5" are
 * one backend), or undefined when it is not an IP address.
 */
export function canonicalAddress(address: string): string | undefined {
  if (isIPv4(address)) return address;
  if (!isIPv6(address) || address.includes("%")) return undefined;
  return new SocketAddress({ address, family: "ipv6" }).address;
}

/** The key of a backend: "10.0.0.5:53/udp", "[fd00::5]:53/udp". */
export function backendKey(b: AgentBackend): string {
  const host = b.address.includes(":") ? `[${b.address}]` : b.address;
  return `${host}:${b.port}/${b.protocol}`;
}

/** Checks a value read from outside (the state file) and returns it as a backend, or undefined. */
export function asBackend(value: unknown): AgentBackend | undefined {
  if (typeof value !== "object" || value === null) return undefined;
  const { address, port, protocol } = value as Record<string, unknown>;
  if (typeof address !== "string" || typeof port !== "number") return undefined;
  if (protocol !== "udp" && protocol !== "tcp") return undefined;
  const canonical = canonicalAddress(address);
  if (canonical === undefined || !Number.isInteger(port) || port < 1 || port > 65535) return undefined;
  return { address: canonical, port, protocol };
}
