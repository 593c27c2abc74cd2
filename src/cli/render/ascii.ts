/**
 * AsciiWriter: builds output text directly as bytes in a growing Buffer — no string per cell or
 * line. The table of a 100,000-socket listing is written this way, which leaves nothing for the
 * garbage collector but the Buffer itself.
 */
/** From this many bytes on, a copy is one native call: its fixed cost beats a byte loop only for longer runs. */
const NATIVE_COPY = 24;

export class AsciiWriter {
  private buf: Buffer;
  private pos = 0;

  constructor(capacity: number) {
    this.buf = Buffer.allocUnsafe(Math.max(capacity, 256));
  }

  /** Append text (UTF-8). Short ASCII text is copied byte by byte: cheaper than a call into C++. */
  text(s: string): this {
    const len = s.length;
    this.ensure(len * 3);
    const buf = this.buf;
    let pos = this.pos;
    if (len < 64) {
      for (let i = 0; i < len; i++) {
        const code = s.charCodeAt(i);
        if (code > 127) {
          this.pos += buf.write(s, this.pos, "utf8");
          return this;
        }
        buf[pos++] = code;
      }
      this.pos = pos;
      return this;
    }
    this.pos += buf.write(s, pos, "utf8");
    return this;
  }

  /** Append bytes prepared beforehand (constant text: see `ascii`). */
  raw(bytes: Uint8Array): this {
    return this.copy(bytes, 0, bytes.length);
  }

  /** Append `n` spaces (none when n <= 0). */
  spaces(n: number): this {
    if (n <= 0) return this;
    this.ensure(n);
    const buf = this.buf;
    let pos = this.pos;
    for (let i = 0; i < n; i++) buf[pos++] = 32;
    this.pos = pos;
    return this;
  }

  /**
   * Append again the `len` bytes written at `at` (see `length`): a line that repeats a span of the
   * previous one copies it instead of formatting its fields anew.
   */
  again(at: number, len: number): this {
    return this.copy(this.buf, at, len);
  }

  /** Start recording `span` here: what is appended until end(span) is the span. */
  begin(span: Span): this {
    span.at = this.pos;
    return this;
  }

  /** End recording `span`. */
  end(span: Span): this {
    span.len = this.pos - span.at;
    return this;
  }

  /** Append again the bytes of a span recorded in this writer (and not cleared since). */
  repeat(span: Span): this {
    return this.again(span.at, span.len);
  }

  /** Append the `len` bytes of `src` at `at` (`src` may be this writer's own buffer). */
  copy(src: Uint8Array, at: number, len: number): this {
    this.ensure(len);
    const buf = this.buf;
    let pos = this.pos;
    if (len >= NATIVE_COPY) {
      if (src === buf) buf.copyWithin(pos, at, at + len);
      else buf.set(at === 0 && len === src.length ? src : src.subarray(at, at + len), pos);
      this.pos = pos + len;
      return this;
    }
    for (let i = at, end = at + len; i < end; i++) buf[pos++] = src[i]!;
    this.pos = pos;
    return this;
  }

  /** Append a non-negative integer in decimal. */
  uint(n: number): this {
    if (n < 10) return this.char(48 + n);
    const d = digits(n);
    this.ensure(d);
    const buf = this.buf;
    const start = this.pos;
    for (let i = start + d - 1; i >= start; i--) {
      const q = n < 2147483648 ? (n / 10) | 0 : Math.floor(n / 10);
      buf[i] = 48 + (n - q * 10);
      n = q;
    }
    this.pos = start + d;
    return this;
  }

  /** Append one character code. */
  char(code: number): this {
    this.ensure(1);
    this.buf[this.pos++] = code;
    return this;
  }

  /** Drop trailing spaces (ss trims its lines). */
  trimEnd(): this {
    while (this.pos > 0 && this.buf[this.pos - 1] === 32) this.pos--;
    return this;
  }

  /** Start again at the beginning of the buffer (its previous bytes must no longer be needed). */
  clear(): this {
    this.pos = 0;
    return this;
  }

  /** How many bytes were written. */
  get length(): number {
    return this.pos;
  }

  /** The bytes written so far. */
  bytes(): Buffer {
    return this.buf.subarray(0, this.pos);
  }

  private ensure(n: number): void {
    if (this.pos + n <= this.buf.length) return;
    const bigger = Buffer.allocUnsafe(Math.max(this.buf.length * 2, this.pos + n));
    this.buf.copy(bigger, 0, 0, this.pos);
    this.buf = bigger;
  }
}

/**
 * Span: where bytes written earlier in an AsciiWriter are, for a line that repeats part of the
 * previous one to copy them instead of formatting its fields anew.
 */
export class Span {
  at = 0;
  len = 0;
}

/** Constant text as bytes, encoded once for AsciiWriter.raw. */
export function ascii(text: string): Uint8Array {
  return Buffer.from(text, "utf8");
}

/** The number of decimal digits of a non-negative integer (up to 2^53). */
export function digits(n: number): number {
  if (n < 100000) return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : n < 10000 ? 4 : 5;
  let d = 6;
  for (let m = 1000000; n >= m; m *= 10) d++;
  return d;
}
