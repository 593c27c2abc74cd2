/**
 * Address and prefix text as ss reads it (iproute2 lib/utils.c get_prefix_1): a word with ':' is IPv6
 * in inet_pton(3) syntax, anything else IPv4 in get_addr_ipv4's syntax — one to four dot-separated parts,
 * each a C number (decimal, 0x hex, 0 octal) up to 255, missing parts zero ("10" is 10.0.0.0/32).
 * A prefix length follows a '/', as a C number no larger than the address width.
 */
import { formatIPv4, formatIPv6 } from "../diag/address.js";
import type { HostPrefix } from "./ast.js";

/** Four big-endian 32-bit words, as in inet_diag_sockid (IPv4 uses the first). */
export type AddressWords = [number, number, number, number];

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

/** parseDottedQuad reads inet_pton's strict IPv4 form (four decimal parts, no leading zeros). */
function parseDottedQuad(text: string): number | undefined {
  if (!/^(0|[1-9]\d{0,2})(\.(0|[1-9]\d{0,2})){3}$/.test(text)) return undefined;
  let word = 0;
  for (const part of text.split(".")) {
    const n = Number(part);
    if (n > 255) return undefined;
    word = word * 256 + n;
  }
  return word;
}

/** parseIPv6 returns the four words of an inet_pton(AF_INET6) address, or undefined. */
export function parseIPv6(text: string): AddressWords | undefined {
  const halves = text.split("::");
  if (halves.length > 2) return undefined;
  const groups: number[][] = [];
  for (const half of halves) {
    const out: number[] = [];
    const pieces = half === "" ? [] : half.split(":");
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!;
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseDottedQuad(piece);
        if (v4 === undefined) return undefined;
        out.push(Math.floor(v4 / 65536), v4 & 0xffff);
      } else if (/^[0-9a-fA-F]{1,4}$/.test(piece)) {
        out.push(Number.parseInt(piece, 16));
      } else {
        return undefined;
      }
    }
    groups.push(out);
  }
  const head = groups[0]!;
  const tail = groups[1];
  // An embedded IPv4 may only end the address.
  if (tail !== undefined && head.length > 0 && halves[0]!.includes(".")) return undefined;
  let all: number[];
  if (tail === undefined) {
    if (head.length !== 8) return undefined;
    all = head;
  } else {
    if (head.length + tail.length > 7) return undefined;
    all = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  }
  return [0, 2, 4, 6].map((i) => (all[i]! * 65536 + all[i + 1]!) >>> 0) as AddressWords;
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
  throw new TypeError(`not a canonical ${prefix.family} address: "${prefix.address}"`);
}
