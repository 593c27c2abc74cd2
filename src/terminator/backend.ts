/**
 * A load-balancer backend: an exact IP address and port, parsed strictly ("10.0.0.5:53",
 * "[fd00::5]:53").
 */

import {
  ambiguousPort,
  formatIPv4,
  formatIPv6,
  isV4Mapped,
  noPeerAddress,
  parseDottedQuad,
  parseIPv6,
} from "../diag/address.js";
import { AddressError } from "./errors.js";
import type { BackendProtocol } from "./report.js";

export type { BackendProtocol };

/** A backend to terminate connections to. */
export interface Backend {
  address: string;
  port: number;
  protocol?: BackendProtocol;
}

/** A checked backend. */
export interface ParsedBackend {
  family: "inet" | "inet6";
  /** The address in its canonical text; a v4-mapped address as the IPv4 address it maps. */
  address: string;
  port: number;
}

/**
 * Check an address and port; throws AddressError naming what is wrong. The address comes back in
 * its canonical text (IPv6 as RFC 5952 prints it: "fd00:0::05" is "fd00::5"). A v4-mapped IPv6 address
 * (::ffff:a.b.c.d) is the IPv4 backend a.b.c.d: the same endpoint on the wire, reached by IPv4
 * sockets and by IPv6 sockets through the mapped form alike. A zone ("fe80::1%eth0") is refused:
 * sock_diag matches addresses, not interfaces; so are the unspecified and broadcast addresses
 * (0.0.0.0, ::, 255.255.255.255), which no backend has.
 */
export function checkBackend(
  address: string,
  port: number,
  input = `${shown(address)}:${shown(port)}`,
): ParsedBackend {
  // Checked by type first: a String-like object would pass a parser through its toString.
  if (typeof address !== "string")
    throw new AddressError(input, `the address must be a string, not ${kindOf(address)}`);
  if (typeof port !== "number")
    throw new AddressError(input, `the port must be a number, not ${kindOf(port)}`);
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AddressError(input, `port ${port} is out of range (1-65535)`);
  }
  const notPeer = noPeerAddress(address);
  if (notPeer) throw new AddressError(input, `"${address}" is ${notPeer}`);
  if (parseDottedQuad(address) !== undefined) return { family: "inet", address, port };
  const words = parseIPv6(address);
  if (words === undefined) {
    const why = address.includes("%")
      ? "has a zone index, which is not supported"
      : "is not an IPv4 or IPv6 address";
    throw new AddressError(input, `"${address}" ${why}`);
  }
  const [w0, w1, w2, w3] = words;
  if (isV4Mapped(w0, w1, w2)) return { family: "inet", address: formatIPv4(w3), port };
  return { family: "inet6", address: formatIPv6(w0, w1, w2, w3), port };
}

/** A value of a caller's input as a message shows it: strings as they are, the rest by kind. */
function shown(value: unknown): string {
  if (typeof value === "string") return value;
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean")
    return String(value);
  return `(${kindOf(value)})`;
}

function kindOf(value: unknown): string {
  if (value === null) return "null";
  if (typeof value === "string") return `the string ${JSON.stringify(value)}`;
  if (typeof value === "bigint") return `the bigint ${value}n`;
  if (typeof value === "object") return Array.isArray(value) ? "an array" : "an object";
  return typeof value === "undefined" ? "undefined" : `a ${typeof value}`;
}

/**
 * Check that `backend` is a { address, port, protocol? } object before reading its fields; throws
 * AddressError naming what it is instead.
 */
export function checkBackendObject(backend: unknown): Backend {
  if (typeof backend !== "object" || backend === null || Array.isArray(backend))
    throw new AddressError(
      shown(backend),
      `a backend is an object { address, port, protocol? }, not ${kindOf(backend)}`,
    );
  return backend as Backend;
}

/**
 * Parse "IP:PORT" or "[IPv6]:PORT"; throws AddressError, also for a port with a leading zero that
 * an ss filter would read as another port (see ambiguousPort).
 */
export function parseBackend(text: string): ParsedBackend {
  if (typeof text !== "string")
    throw new AddressError(shown(text), `expected "IP:PORT" text, not ${kindOf(text)}`);
  const bracketed = /^\[([^\]]*)\]:(\d*)$/.exec(text);
  const m = bracketed ?? /^([^:]*):(\d*)$/.exec(text);
  if (!m) {
    const bare = /^\[(.*)\]$/.exec(text)?.[1] ?? text;
    // A zone index still makes an address: the missing port is what to say first.
    if (parseDottedQuad(text) !== undefined || parseIPv6(bare.split("%")[0]!) !== undefined)
      throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
    throw new AddressError(text, "expected IP:PORT or [IPv6]:PORT");
  }
  const [, address, portText] = m as unknown as [string, string, string];
  if (bracketed && parseDottedQuad(address) !== undefined)
    throw new AddressError(text, "brackets are for IPv6 addresses only");
  if (portText === "") throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
  const ambiguous = ambiguousPort(portText);
  if (ambiguous) throw new AddressError(text, ambiguous);
  return checkBackend(address, Number(portText), text);
}
