/**
 * A load-balancer backend: an exact IP address and port, parsed strictly ("10.0.0.5:53",
 * "[fd00::5]:53"), with the address words the socket matching compares against.
 */
import { isIPv4, isIPv6 } from "node:net";
import { type AddressWords, parseIPv4, parseIPv6 } from "../filter/prefix.js";

export type BackendProtocol = "udp" | "tcp" | "any";

/** A backend to terminate connections to. */
export interface Backend {
  address: string;
  port: number;
  protocol?: BackendProtocol;
}

/** AddressError: a backend address or port that is not valid; names the offending text. */
export class AddressError extends Error {
  override readonly name = "AddressError";
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
  address: string;
  /** The address as four big-endian words (IPv4: first word). */
  words: AddressWords;
  port: number;
}

/** Check an address and port; throws AddressError naming what is wrong. */
export function checkBackend(address: string, port: number, input = `${address}:${port}`): ParsedBackend {
  if (!Number.isInteger(port) || port < 1 || port > 65535) {
    throw new AddressError(input, `port ${port} is out of range (1-65535)`);
  }
  if (isIPv4(address)) return { family: "inet", address, words: [parseIPv4(address)!, 0, 0, 0], port };
  if (isIPv6(address)) return { family: "inet6", address, words: parseIPv6(address)!, port };
  throw new AddressError(input, `"${address}" is not an IPv4 or IPv6 address`);
}

/** Parse "IP:PORT" or "[IPv6]:PORT"; throws AddressError. */
export function parseBackend(text: string): ParsedBackend {
  const m = /^\[([^\]]*)\]:(\d*)$/.exec(text) ?? /^([^:]*):(\d*)$/.exec(text);
  if (!m) {
    if (isIPv4(text) || isIPv6(text))
      throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
    throw new AddressError(text, "expected IP:PORT or [IPv6]:PORT");
  }
  const [, address, portText] = m as unknown as [string, string, string];
  if (portText === "") throw new AddressError(text, "a port is missing (IP:PORT, [IPv6]:PORT)");
  return checkBackend(address, Number(portText), text);
}
