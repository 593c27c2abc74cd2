/**
 * Address text, to and from the 32-bit big-endian words of inet_diag_sockid.idiag_src/dst: the
 * one place addresses are formatted (as inet_ntop does) and read in inet_pton's syntax. The ss
 * filter's looser IPv4 forms are the filter's own (filter/prefix.ts).
 */

/** Four big-endian 32-bit words, as in inet_diag_sockid (IPv4 uses the first). */
export type AddressWords = [number, number, number, number];

/** formatIPv4 renders one big-endian word as dotted quad. */
export function formatIPv4(word: number): string {
  return `${word >>> 24}.${(word >>> 16) & 255}.${(word >>> 8) & 255}.${word & 255}`;
}

/** isV4Mapped tells whether four IPv6 words hold ::ffff:a.b.c.d. */
export function isV4Mapped(w0: number, w1: number, w2: number): boolean {
  return w0 === 0 && w1 === 0 && w2 === 0xffff;
}

/**
 * formatIPv6 renders four big-endian words in RFC 5952 form (lower case, longest zero run as "::",
 * v4-mapped addresses as ::ffff:a.b.c.d), the text inet_ntop and ss print.
 */
export function formatIPv6(w0: number, w1: number, w2: number, w3: number): string {
  if (isV4Mapped(w0, w1, w2)) return `::ffff:${formatIPv4(w3)}`;
  // The deprecated IPv4-compatible form ::a.b.c.d, as inet_ntop prints it (not for :: and ::1-like ::x).
  if (w0 === 0 && w1 === 0 && w2 === 0 && w3 >>> 16 !== 0) return `::${formatIPv4(w3)}`;
  const groups = [
    w0 >>> 16,
    w0 & 0xffff,
    w1 >>> 16,
    w1 & 0xffff,
    w2 >>> 16,
    w2 & 0xffff,
    w3 >>> 16,
    w3 & 0xffff,
  ];
  let bestStart = -1;
  let bestLen = 1; // RFC 5952 4.2.2: a single zero group is not compressed
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) {
      bestStart = i;
      bestLen = j - i;
    }
    i = j;
  }
  const hex = (g: number[]) => g.map((x) => x.toString(16)).join(":");
  if (bestStart < 0) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLen))}`;
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

/** The RFC 5952 text of an IPv6 address in inet_pton syntax (as the kernel's are printed), or undefined. */
export function canonicalIPv6(text: string): string | undefined {
  const words = parseIPv6(text);
  return words && formatIPv6(...words);
}
