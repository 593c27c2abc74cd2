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
export function parseDottedQuad(text: string, start = 0): number | undefined {
  let word = 0;
  let part = 0;
  let digits = 0;
  let dots = 0;
  for (let i = start; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === DOT) {
      if (digits === 0 || dots === 3) return undefined;
      word = word * 256 + part;
      part = 0;
      digits = 0;
      dots++;
      continue;
    }
    const d = c - 0x30;
    // A digit after a leading 0 ("01") is not inet_pton's.
    if (d < 0 || d > 9 || (digits > 0 && part === 0)) return undefined;
    part = part * 10 + d;
    digits++;
    if (part > 255) return undefined;
  }
  if (digits === 0 || dots !== 3) return undefined;
  return word * 256 + part;
}

/** parseIPv6 returns the four words of an inet_pton(AF_INET6) address, or undefined. */
export function parseIPv6(text: string): AddressWords | undefined {
  const groups = [0, 0, 0, 0, 0, 0, 0, 0];
  let n = 0;
  // Where "::" stands, in groups; -1 when there is none.
  let gap = -1;
  let i = 0;
  const end = text.length;
  if (text.charCodeAt(0) === COLON) {
    if (text.charCodeAt(1) !== COLON) return undefined;
    gap = 0;
    i = 2;
  }
  while (i < end) {
    const start = i;
    let group = 0;
    for (let h = hexValue(text.charCodeAt(i)); h >= 0; h = hexValue(text.charCodeAt(++i)))
      group = group * 16 + h;
    if (text.charCodeAt(i) === DOT) {
      // An embedded IPv4 address takes two groups and ends the text.
      const v4 = n <= 6 ? parseDottedQuad(text, start) : undefined;
      if (v4 === undefined) return undefined;
      groups[n++] = v4 >>> 16;
      groups[n++] = v4 & 0xffff;
      break;
    }
    if (i === start || i - start > 4 || n === 8) return undefined;
    groups[n++] = group;
    if (i === end) break;
    if (text.charCodeAt(i) !== COLON || ++i === end) return undefined;
    if (text.charCodeAt(i) === COLON) {
      if (gap >= 0) return undefined;
      gap = n;
      i++;
    }
  }
  if (gap < 0 ? n !== 8 : n > 7) return undefined;
  if (gap >= 0) {
    const moved = n - gap;
    for (let k = 1; k <= moved; k++) groups[8 - k] = groups[n - k]!;
    for (let k = gap; k < 8 - moved; k++) groups[k] = 0;
  }
  return [0, 2, 4, 6].map((k) => (groups[k]! * 65536 + groups[k + 1]!) >>> 0) as AddressWords;
}

/** The words of a dotted quad: the address first, then zeros (how idiag_src holds IPv4). */
function ipv4Words(text: string): AddressWords | undefined {
  const word = parseDottedQuad(text);
  return word === undefined ? undefined : [word, 0, 0, 0];
}

const COLON = 0x3a;
const DOT = 0x2e;

/** The value of a hex digit's char code, or -1 (NaN past the end is -1 too). */
function hexValue(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  const lower = c | 0x20;
  return lower >= 0x61 && lower <= 0x66 ? lower - 0x61 + 10 : -1;
}

/**
 * WordsCache: the words of address texts met lately, in two generations. A text found in the
 * older one moves to the newer; when the newer fills, the older is dropped. The addresses in use
 * stay, while a stream of one-off peers passes through.
 */
class WordsCache {
  #young = new Map<string, Readonly<AddressWords>>();
  #old = new Map<string, Readonly<AddressWords>>();

  get(text: string): Readonly<AddressWords> | undefined {
    const words = this.#young.get(text);
    if (words !== undefined) return words;
    const older = this.#old.get(text);
    if (older !== undefined) this.set(text, older);
    return older;
  }

  set(text: string, words: Readonly<AddressWords>): void {
    if (this.#young.size >= WORDS_GENERATION) {
      this.#old = this.#young;
      this.#young = new Map();
    }
    this.#young.set(text, words);
  }
}

const WORDS_GENERATION = 4096;
const wordsOfText = [new WordsCache(), new WordsCache()] as const;

/**
 * The four words of an address text in inet_pton syntax (IPv4: the word first, then zeros), or
 * undefined when it is not an address of that family. The answer is shared, and frozen.
 */
export function addressWords(text: string, v6: boolean): Readonly<AddressWords> | undefined {
  const cache = wordsOfText[v6 ? 1 : 0];
  let words = cache.get(text);
  if (words === undefined) {
    const parsed = v6 ? parseIPv6(text) : ipv4Words(text);
    if (parsed === undefined) return undefined;
    words = Object.freeze(parsed);
    cache.set(text, words);
  }
  return words;
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

/**
 * Why `text` (an IPv4 or IPv6 address) cannot be a peer's address, if it cannot: the unspecified
 * address (0.0.0.0, ::) or IPv4's limited broadcast (255.255.255.255), also v4-mapped. Where a
 * caller names the one end a flow went to, either can only be a typo.
 */
export function noPeerAddress(text: string): string | undefined {
  const v4 = parseDottedQuad(text);
  const words = v4 === undefined ? parseIPv6(text) : undefined;
  if (words && words[0] === 0 && words[1] === 0 && words[2] === 0 && words[3] === 0)
    return "the unspecified address (any address), never a peer's";
  const word = v4 ?? (words && isV4Mapped(words[0], words[1], words[2]) ? words[3] : undefined);
  if (word === undefined) return undefined;
  if (word === 0) return "the unspecified address (any address), never a peer's";
  if (word >>> 0 === 0xffffffff) return "the broadcast address, never a peer's";
  return undefined;
}

/**
 * Why a port's decimal text is refused, if it is: a leading zero where reading it as octal (as
 * ss's filters do, strtoul base 0) would give another port or none — "066" is 54 in a filter, 66
 * read as decimal. "0" and "00"-"07" read the same both ways.
 */
export function ambiguousPort(text: string): string | undefined {
  if (!/^0\d+$/.test(text)) return undefined;
  const octal = /^[0-7]+$/.test(text) ? Number.parseInt(text, 8) : undefined;
  if (octal === Number.parseInt(text, 10)) return undefined;
  const filter = octal === undefined ? "is no number" : `is port ${octal}`;
  return `port "${text}" has a leading zero: read as decimal it is ${Number.parseInt(text, 10)}, in an ss filter (octal) it ${filter}; write it without the zero`;
}
