/**
 * Address and prefix text as ss reads it (iproute2 lib/utils.c get_prefix_1): a word with ':' is IPv6
 * in inet_pton(3) syntax, anything else IPv4 in get_addr_ipv4's syntax — one to four dot-separated parts,
 * each a C number (decimal, 0x hex, 0 octal) up to 255, missing parts zero ("10" is 10.0.0.0/32).
 * A prefix length follows a '/', as a C number no larger than the address width.
 */
import { type AddressWords, formatIPv4, formatIPv6, parseIPv6 } from "../diag/address.js";
import { MisuseError } from "../sys/errors.js";
import type { HostPrefix } from "./ast.js";

export type { AddressWords };

/**
 * parseCNumber reads an unsigned number the way strtoul(s, NULL, 0) reads a whole word: decimal,
 * 0x hex or 0-prefixed octal; undefined for anything else (signs, blanks and trailing text included).
 */
export function parseCNumber(text: string): number | undefined {
  if (/^0[xX][0-9a-fA-F]+$/.test(text)) return Number.parseInt(text.slice(2), 16);
  if (/^0[0-7]*$/.test(text)) return Number.parseInt(text, 8);
  if (/^[1-9][0-9]*$/.test(text)) return Number(text);
  return undefined;
}

/** parseIPv4 returns the big-endian word of an ss IPv4 address, or undefined. */
export function parseIPv4(text: string): number | undefined {
  const parts = text.split(".");
  if (parts.length > 4) return undefined;
  let word = 0;
  for (let i = 0; i < 4; i++) {
    const part = parts[i];
    const n = part === undefined ? 0 : parseCNumber(part);
    if (n === undefined || n > 255) return undefined;
    word = word * 256 + n;
  }
  return word;
}

/** parsePrefix reads `ADDR[/LEN]`; returns a reason string when it is not a valid prefix. */
export function parsePrefix(text: string): HostPrefix | string {
  const slash = text.indexOf("/");
  const addrText = slash < 0 ? text : text.slice(0, slash);
  const inet6 = addrText.includes(":");
  const width = inet6 ? 128 : 32;
  let address: string;
  if (inet6) {
    const words = parseIPv6(addrText);
    if (!words) return `"${addrText}" is not an IPv6 address`;
    address = formatIPv6(...words);
  } else {
    const word = parseIPv4(addrText);
    if (word === undefined) return `"${addrText}" is not an IPv4 address`;
    address = formatIPv4(word);
  }
  let prefixLength = width;
  if (slash >= 0) {
    const n = parseCNumber(text.slice(slash + 1));
    if (n === undefined || n > width) return `"${text.slice(slash + 1)}" is not a prefix length (0-${width})`;
    prefixLength = n;
  }
  return { family: inet6 ? "inet6" : "inet", address, prefixLength };
}

/** prefixWords returns the address words of a prefix (which holds canonical text, so it parses). */
export function prefixWords(prefix: HostPrefix): AddressWords {
  if (prefix.family === "inet6") {
    const words = parseIPv6(prefix.address);
    if (words) return words;
  } else {
    const word = parseIPv4(prefix.address);
    if (word !== undefined) return [word, 0, 0, 0];
  }
  throw new MisuseError(`not a canonical ${prefix.family} address: "${prefix.address}"`);
}
