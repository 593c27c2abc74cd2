/**
 * A load-balancer backend: an exact IP address and port, parsed strictly ("10.0.0.5:53",
 * "[fd00::5]:53").
 */

import { isIPv4, isIPv6 } from "node:net";
import { formatIPv4, isV4Mapped, parseIPv6 } from "../diag/address.js";
import { SockdiagError } from "../sys/errors.js";

export type BackendProtocol = "udp" | "tcp" | "any";

/** A backend to terminate connections to. */
export interface Backend {
  address: string;
  port: number;
  protocol?: BackendProtocol;
}

/** AddressError: a backend address or port that is not valid; names the offending text. */
export class AddressError extends SockdiagError {
  override readonly name = "AddressError";
  override readonly code = "ERR_SOCKDIAG_ADDRESS";
  constructor(
    readonly input: string,
    detail: string,
  ) {
    super(`invalid backend "${input}": ${detail}`);
  }
}

/** A checked backend. */
export interface ParsedBackend {
  family: "inet" | "inet6";
  /** The address in its canonical text; a v4-mapped address as the IPv4 address it maps. */
  address: string;
  port: number;
}

/**
 * Check an address and port; throws AddressError naming what is wrong. A v4-mapped IPv6 address
 * (::ffff:a.b.c.d) is the IPv4 backend a.b.c.d: the same endpoint on the wire, reached by IPv4
 * sockets and by IPv6 sockets through the mapped form alike. A zone ("fe80::1%eth0") is refused:
 * sock_diag matches addresses, not interfaces.
 */
export function checkBackend(address: string, port: number, input = `${address}:${port}`): ParsedBackend {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AddressError(input, `port ${port} is out of range (1-65535)`);
  }
  if (isIPv4(address)) return { family: "inet", address, port };
  const words = isIPv6(address) ? parseIPv6(address) : undefined;
  if (words === undefined) {
    const why = address.includes("%")
      ? "has a zone index, which is not supported"
      : "is not an IPv4 or IPv6 address";
    throw new AddressError(input, `"${address}" ${why}`);
  }
  const [w0, w1, w2, w3] = words;
  if (isV4Mapped(w0, w1, w2)) return { family: "inet", address: formatIPv4(w3), port };
  return { family: "inet6", address, port };
}

/** Parse "IP:PORT" or "[IPv6]:PORT"; throws AddressError. */
export function parseBackend(text: string): ParsedBackend {
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(text);
  const m = bracketed ?? /^([^:]*):(\d*)$/.exec(text);
  if (!m) {
    const bare = /^\[(.*)\]$/.exec(text)?.[1] ?? text;
    if (isIPv4(text) || isIPv6(bare))
      throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
    throw new AddressError(text, "expected IP:PORT or [IPv6]:PORT");
  }
  const [, address, portText] = m as unknown as [string, string, string];
  if (bracketed && isIPv4(address)) throw new AddressError(text, "brackets are for IPv6 addresses only");
  if (portText === "") throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
  return checkBackend(address, Number(portText), text);
}
