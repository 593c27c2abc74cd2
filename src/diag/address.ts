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

/** Words of the address texts met lately; cleared whole when full (sockets share few addresses). */
const wordsOfText = [new Map<string, Readonly<AddressWords>>(), new Map<string, Readonly<AddressWords>>()];
const WORDS_REMEMBERED = 4096;

/**
 * The four words of an address text in inet_pton syntax (IPv4: the word first, then zeros), or
 * undefined when it is not an address of that family. The answer is shared: do not change it.
 */
export function addressWords(text: string, v6: boolean): Readonly<AddressWords> | undefined {
  const known = wordsOfText[v6 ? 1 : 0]!;
  let words = known.get(text);
  if (words === undefined) {
    const v4 = v6 ? undefined : parseDottedQuad(text);
    words = v6 ? parseIPv6(text) : v4 === undefined ? undefined : [v4, 0, 0, 0];
    if (words === undefined) return undefined;
    if (known.size >= WORDS_REMEMBERED) known.clear();
    known.set(text, words);
  }
  return words;
}

/** The RFC 5952 text of an IPv6 address in inet_pton syntax (as the kernel's are printed), or undefined. */
export function canonicalIPv6(text: string): string | undefined {
  const words = parseIPv6(text);
  return words && formatIPv6(...words);
}

/** Remembered addresses per side of a run of sockets: a small table, indexed by a hash of the words. */
const SLOTS = 128;
const SLOT_SHIFT = 25; // 32 - log2(SLOTS): the top bits of a multiplicative hash
const GOLDEN = 0x9e3779b1 | 0;

/**
 * AddressTexts formats the addresses of a run of sockets (one dump, one chunk), remembering the
 * text of the last few addresses met on each side: the sockets of one namespace share a handful of
 * local and remote addresses, so listing 100,000 of them builds few strings. A slot keeps one
 * address; a different one with the same hash replaces it.
 */
export class AddressTexts {
  readonly #src = new AddressTable();
  readonly #dst = new AddressTable();

  /** The text of the address at `view[at]` (IPv4: one word; IPv6: four), as a socket's `src`. */
  src(view: DataView, at: number, v6: boolean): string {
    return this.#src.text(view, at, v6);
  }

  /** The same for a socket's `dst`. */
  dst(view: DataView, at: number, v6: boolean): string {
    return this.#dst.text(view, at, v6);
  }
}

/** The text of the address at `view[at]`, formatted anew. */
export function addressText(view: DataView, at: number, v6: boolean): string {
  if (!v6) return formatIPv4(view.getUint32(at));
  return formatIPv6(
    view.getUint32(at),
    view.getUint32(at + 4),
    view.getUint32(at + 8),
    view.getUint32(at + 12),
  );
}

class AddressTable {
  readonly #v4Words = new Int32Array(SLOTS);
  readonly #v4Texts = new Array<string>(SLOTS).fill("");
  readonly #v6Words = new Int32Array(4 * SLOTS);
  readonly #v6Texts = new Array<string>(SLOTS).fill("");

  text(view: DataView, at: number, v6: boolean): string {
    const w0 = view.getInt32(at);
    if (!v6) {
      const slot = Math.imul(w0, GOLDEN) >>> SLOT_SHIFT;
      const known = this.#v4Texts[slot]!;
      if (known !== "" && this.#v4Words[slot] === w0) return known;
      const text = formatIPv4(w0 >>> 0);
      this.#v4Words[slot] = w0;
      this.#v4Texts[slot] = text;
      return text;
    }
    const w1 = view.getInt32(at + 4);
    const w2 = view.getInt32(at + 8);
    const w3 = view.getInt32(at + 12);
    const slot =
      Math.imul(w0 ^ Math.imul(w1 ^ Math.imul(w2 ^ Math.imul(w3, GOLDEN), GOLDEN), GOLDEN), GOLDEN) >>>
      SLOT_SHIFT;
    const words = this.#v6Words;
    const texts = this.#v6Texts;
    const known = texts[slot]!;
    const k = 4 * slot;
    if (known !== "" && words[k] === w0 && words[k + 1] === w1 && words[k + 2] === w2 && words[k + 3] === w3)
      return known;
    const text = formatIPv6(w0 >>> 0, w1 >>> 0, w2 >>> 0, w3 >>> 0);
    words[k] = w0;
    words[k + 1] = w1;
    words[k + 2] = w2;
    words[k + 3] = w3;
    texts[slot] = text;
    return text;
  }
}
