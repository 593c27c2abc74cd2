/**
 * Address formatting from the 32-bit big-endian words of inet_diag_sockid.idiag_src/dst, done only
 * when a caller reads an address: listing 100,000 sockets must not build 200,000 strings nobody prints.
 */

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
