/**
 * ObjectStream: a JSON object read as it streams in, one piece at a time — a list answer
 * (`{"kind":…,"metadata":{…},"items":[…]}`, items streamed) and the agent's state file
 * (`{"version":2,…,"services":{…},"unlisted":[…]}`, both streamed). The object is tokenised byte by
 * byte — strings, nesting, the separators of the top object and of the members it streams — and
 * each piece's bytes go to JSON.parse and out at once: an element of a streamed array, a member of
 * a streamed object, or another member of the top object, kept until the end. So no more than one
 * piece (and the chunk it sits in) is held at a time; each piece and the whole are bounded in bytes.
 *
 * What is accepted is exactly what JSON.parse accepts of the whole, with one exception: a streamed
 * member named twice is refused (JSON.parse keeps the last; by then the first has gone out).
 *
 * JSON's structural characters are ASCII, and no byte of a multi-byte UTF-8 character is ASCII, so
 * bytes can be scanned without decoding; a piece's bytes are decoded whole.
 */
import { setImmediate as turn } from "node:timers/promises";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The bytes parsed in one turn of the event loop by read(): a few ms of JSON and pieces. */
const PIECE_BYTES = 64 * 1024;

/** A member's name and colon, before its value: `"items":`. */
const MEMBER_NAME = /^[ \t\n\r]*"([^"\\]*)"[ \t\n\r]*:[ \t\n\r]*$/;
/** JSON's white space, and nothing else. */
const BLANK = /^[ \t\n\r]*$/;

/** An answer, or one piece of it, over its bound: the answer is abandoned. */
export class AnswerTooLargeError extends Error {
  override readonly name = "AnswerTooLargeError";
  constructor(
    /** "object": one piece (an item, a watch event); "answer": the whole (or a stream's initial state). */
    readonly bound: "object" | "answer",
    readonly limitBytes: number,
    message: string,
  ) {
    super(message);
  }
}

/** An answer (or a file) that broke: cut short, not JSON, not an object, not a list or an event. */
export class BrokenAnswerError extends Error {
  override readonly name = "BrokenAnswerError";
}

export interface ObjectStreamOptions {
  /** What is read, as messages name it: "the list answer", a file's path. */
  what: string;
  /**
   * The members streamed, by name, and the bracket their value opens with: an array's elements go
   * out one by one, an object's members as objects of one member each. A member of that name whose
   * value is of another kind is kept whole, as the others are.
   */
  streamed: Readonly<Record<string, "[" | "{">>;
  /** Bytes of one piece. */
  maxPieceBytes: number;
  /** Bytes of the whole. */
  maxBytes: number;
}

/** What is captured: a member of the top object, a piece of a streamed member, or nothing. */
type Capture = "member" | "piece" | "none";

export class ObjectStream {
  private depth = 0;
  private inString = false;
  private escaped = false;
  /** The bytes written before the current chunk. */
  private offset = 0;
  private capture: Capture = "none";
  /** The capture's pieces from earlier chunks. */
  private parts: Buffer[] = [];
  private partBytes = 0;
  /** Where the capture starts in the current chunk (0 when it started in an earlier one). */
  private start = 0;
  /** Where the capture starts in the whole. */
  private startByte = 0;
  /** The capture follows a comma: it may not be empty. */
  private afterComma = false;
  /** The member being streamed, and the bracket that closes it. */
  private streaming: { name: string; close: number } | undefined;
  /** The member being read is a streamed one, closed: nothing but white space may be left of it. */
  private streamedDone = false;
  private closed = false;
  private readonly members: Record<string, unknown> = {};
  private readonly seen = new Set<string>();

  constructor(
    /** Each piece of a streamed member, as it is read; what it throws ends the read. */
    private readonly onPiece: (member: string, piece: unknown) => void,
    private readonly options: ObjectStreamOptions,
  ) {}

  /**
   * Every chunk, parsed in pieces with a turn of the event loop after each PIECE_BYTES: one read of
   * a socket hands over whatever it buffered, megabytes from a fast server, and chunks the stream
   * holds already come one after the other with no turn between (a promise each). Rejects as write
   * does, or when `signal` aborts.
   */
  async read(chunks: AsyncIterable<Buffer>, signal: AbortSignal): Promise<void> {
    let sinceTurn = 0;
    for await (const chunk of chunks) {
      for (let at = 0; at < chunk.length; ) {
        if (sinceTurn >= PIECE_BYTES) {
          await turn();
          signal.throwIfAborted();
          sinceTurn = 0;
        }
        const piece = chunk.subarray(at, at + PIECE_BYTES - sinceTurn);
        this.write(piece);
        at += piece.length;
        sinceTurn += piece.length;
      }
    }
  }

  /** The next chunk; throws AnswerTooLargeError or BrokenAnswerError. */
  write(chunk: Buffer): void {
    const { maxBytes, what } = this.options;
    if (this.offset + chunk.length > maxBytes)
      throw new AnswerTooLargeError("answer", maxBytes, `${what} is over ${maxBytes} bytes; abandoned`);
    this.start = 0;
    const n = chunk.length;
    // The next backslash at or after i (-1: none in this chunk); found again only once passed.
    let backslash = chunk.indexOf(BACKSLASH);
    for (let i = 0; i < n; i++) {
      if (this.inString) {
        if (this.escaped) {
          this.escaped = false;
          continue;
        }
        // Jump to the string's next quote or backslash.
        if (backslash !== -1 && backslash < i) backslash = chunk.indexOf(BACKSLASH, i);
        const quote = chunk.indexOf(QUOTE, i);
        if (backslash !== -1 && (quote === -1 || backslash < quote)) {
          i = backslash;
          this.escaped = true;
        } else if (quote === -1) {
          i = n;
        } else {
          i = quote;
          this.inString = false;
        }
        continue;
      }
      const c = chunk[i]!;
      if (this.depth === 0) {
        if (isSpace(c)) continue;
        if (this.closed) throw this.notJson(this.offset + i, "more after its end");
        if (c !== OPEN_BRACE) throw new BrokenAnswerError(`${what} is not a JSON object`);
        this.depth = 1;
        this.begin("member", i + 1, false);
      } else if (c === QUOTE) {
        this.inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.open(chunk, i, c);
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.close(chunk, i, c);
      } else if (c === COMMA) {
        if (this.streaming && this.depth === 2) {
          this.endPiece(chunk, i, true);
          this.begin("piece", i + 1, true);
        } else if (this.depth === 1) {
          this.endMember(chunk, i, true);
          this.begin("member", i + 1, true);
        }
      }
    }
    if (this.capture !== "none") this.keep(chunk.subarray(this.start));
    this.offset += n;
  }

  /**
   * The end: the top object's members that were not streamed, and the names of those that were.
   * Throws BrokenAnswerError if it is not whole.
   */
  end(): { members: Record<string, unknown>; streamed: ReadonlySet<string> } {
    if (!this.closed) throw this.notJson(this.offset, "it ends early");
    return { members: this.members, streamed: this.seen };
  }

  private open(chunk: Buffer, i: number, c: number): void {
    if (this.depth === 1 && !this.streamedDone) {
      const name = MEMBER_NAME.exec(this.captured(chunk, i))?.[1];
      if (name !== undefined && this.options.streamed[name] === String.fromCharCode(c)) {
        if (this.seen.has(name)) throw new BrokenAnswerError(`${this.options.what} has "${name}" twice`);
        this.seen.add(name);
        this.streaming = { name, close: c === OPEN_BRACE ? CLOSE_BRACE : CLOSE_BRACKET };
        this.depth = 2;
        this.begin("piece", i + 1, false);
        return;
      }
    }
    this.depth++;
  }

  private close(chunk: Buffer, i: number, c: number): void {
    if (this.streaming && this.depth === 2) {
      if (c !== this.streaming.close) throw this.notJson(this.offset + i, "a bracket that does not match");
      this.endPiece(chunk, i, false);
      this.streaming = undefined;
      this.depth = 1;
      this.begin("member", i + 1, false);
      this.streamedDone = true;
      return;
    }
    if (this.depth === 1) {
      if (c !== CLOSE_BRACE) throw this.notJson(this.offset + i, "a bracket that does not match");
      this.endMember(chunk, i, false);
      this.depth = 0;
      this.closed = true;
      return;
    }
    this.depth--;
  }

  private begin(capture: Capture, at: number, afterComma: boolean): void {
    this.capture = capture;
    this.parts = [];
    this.partBytes = 0;
    this.start = at;
    this.startByte = this.offset + at;
    this.afterComma = afterComma;
    this.streamedDone = false;
  }

  /** Keep a piece of the capture past the end of its chunk. */
  private keep(piece: Buffer): void {
    this.parts.push(piece);
    this.partBytes += piece.length;
    this.checkPieceBound(this.partBytes);
  }

  /** The capture's text up to `end` in the current chunk. */
  private captured(chunk: Buffer, end: number): string {
    const last = chunk.subarray(this.start, end);
    this.checkPieceBound(this.partBytes + last.length);
    return (this.parts.length === 0 ? last : Buffer.concat([...this.parts, last])).toString("utf8");
  }

  /**
   * The capture (ending at byte `at`, at a comma or not) is empty: only an empty array or object
   * may be, not what a comma begins or ends (`[1,,2]`, `[1,]`, `{,}`).
   */
  private empty(text: string, at: number, comma: boolean): boolean {
    if (!BLANK.test(text)) return false;
    if (comma || this.afterComma) throw this.notJson(at, "nothing between two separators");
    return true;
  }

  private endPiece(chunk: Buffer, end: number, comma: boolean): void {
    const text = this.captured(chunk, end);
    this.capture = "none";
    if (this.empty(text, this.offset + end, comma)) return;
    const { name, close } = this.streaming!;
    this.onPiece(name, this.parse(close === CLOSE_BRACE ? `{${text}}` : text));
  }

  private endMember(chunk: Buffer, end: number, comma: boolean): void {
    const text = this.captured(chunk, end);
    this.capture = "none";
    if (this.streamedDone) {
      if (!BLANK.test(text)) throw this.notJson(this.startByte, "more after a streamed member's value");
      return;
    }
    if (this.empty(text, this.offset + end, comma)) return;
    Object.assign(this.members, this.parse(`{${text}}`));
  }

  private parse(text: string): unknown {
    try {
      return JSON.parse(text);
    } catch (err) {
      throw this.notJson(this.startByte, (err as Error).message);
    }
  }

  /** Not JSON, at this byte of the whole (a piece that JSON.parse refused: where it starts). */
  private notJson(byte: number, why: string): BrokenAnswerError {
    return new BrokenAnswerError(`${this.options.what} is not JSON at byte ${byte}: ${why}`);
  }

  private checkPieceBound(bytes: number): void {
    const { maxPieceBytes, what } = this.options;
    if (bytes > maxPieceBytes)
      throw new AnswerTooLargeError(
        "object",
        maxPieceBytes,
        `${what} has a part over ${maxPieceBytes} bytes (an item, a member); abandoned`,
      );
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
