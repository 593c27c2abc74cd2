/**
 * ListParser: a list answer (`{"kind":…,"metadata":{…},"items":[…]}`) read as it streams in. The
 * envelope is tokenised byte by byte — strings, nesting, the separators of the top object and of
 * its `items` array — and each item's bytes go to JSON.parse and out at once, so no more than one
 * item (and the chunk it sits in) is held at a time; the envelope's other members are parsed at
 * their end. Each item (or other member) and the answer as a whole are bounded in bytes.
 *
 * JSON's structural characters are ASCII, and no byte of a multi-byte UTF-8 character is ASCII, so
 * bytes can be scanned without decoding; an item's bytes are decoded whole.
 */
import { setImmediate as turn } from "node:timers/promises";

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;

/** The bytes parsed in one turn of the event loop by read(): a few ms of JSON and items. */
const PIECE_BYTES = 64 * 1024;

/** The key of the array whose elements are streamed. */
const ITEMS_MEMBER = /^\s*"items"\s*:\s*$/;

/** An answer, or one item of it, over its bound: the answer is abandoned. */
export class AnswerTooLargeError extends Error {
  override readonly name = "AnswerTooLargeError";
  constructor(
    /** "object": one item (or watch event); "answer": the whole answer (or a stream's initial state). */
    readonly bound: "object" | "answer",
    readonly limitBytes: number,
    message: string,
  ) {
    super(message);
  }
}

/** An answer that broke: cut short, not JSON, not a list or an event. */
export class BrokenAnswerError extends Error {
  override readonly name = "BrokenAnswerError";
}

export interface ListBounds {
  /** Bytes of one item, or of one other member of the envelope. */
  maxItemBytes: number;
  /** Bytes of the whole answer. */
  maxAnswerBytes: number;
}

/** What is captured: an envelope member (`"key": value`), an item, or nothing. */
type Capture = "member" | "item" | "none";

export class ListParser {
  private depth = 0;
  private inString = false;
  private escaped = false;
  private total = 0;
  private capture: Capture = "none";
  /** The capture's pieces from earlier chunks. */
  private parts: Buffer[] = [];
  private partBytes = 0;
  /** Where the capture starts in the current chunk (0 when it started in an earlier one). */
  private start = 0;
  private inItems = false;
  /** The member being read is `items`: nothing of it left to parse. */
  private skipMember = false;
  private closed = false;
  private readonly members: Record<string, unknown> = {};
  private itemsSeen = false;

  constructor(
    private readonly onItem: (item: unknown) => void,
    private readonly bounds: ListBounds,
  ) {}

  /**
   * Every chunk of an answer, parsed in pieces with a turn of the event loop after each PIECE_BYTES:
   * one read of a socket hands over whatever it buffered, megabytes from a fast server, and chunks
   * the stream holds already come one after the other with no turn between (a promise each). Rejects
   * as write does, or when `signal` aborts.
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

  /** The next chunk of the answer; throws AnswerTooLargeError or BrokenAnswerError. */
  write(chunk: Buffer): void {
    this.total += chunk.length;
    if (this.total > this.bounds.maxAnswerBytes)
      throw new AnswerTooLargeError(
        "answer",
        this.bounds.maxAnswerBytes,
        `the list answer is over ${this.bounds.maxAnswerBytes} bytes; abandoned`,
      );
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
      if (c === QUOTE) {
        this.inString = true;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        this.open(chunk, i, c);
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        this.close(chunk, i);
      } else if (c === COMMA) {
        if (this.inItems && this.depth === 2) {
          this.endItem(chunk, i);
          this.begin("item", i + 1);
        } else if (this.depth === 1) {
          this.endMember(chunk, i);
          this.begin("member", i + 1);
        }
      } else if (this.depth === 0 && !isSpace(c)) {
        throw new BrokenAnswerError("the list answer is not a JSON object");
      }
    }
    if (this.capture !== "none") this.keep(chunk.subarray(this.start));
  }

  /** The answer ended: its envelope's members other than `items`; throws if it is not whole. */
  end(): { members: Record<string, unknown>; itemsSeen: boolean } {
    if (!this.closed || this.inString) throw new BrokenAnswerError("the list answer ended before its end");
    return { members: this.members, itemsSeen: this.itemsSeen };
  }

  private open(chunk: Buffer, i: number, c: number): void {
    if (this.closed) throw new BrokenAnswerError("the list answer goes on after its end");
    if (this.depth === 0) {
      if (c !== OPEN_BRACE) throw new BrokenAnswerError("the list answer is not a JSON object");
      this.depth = 1;
      this.begin("member", i + 1);
      return;
    }
    if (this.depth === 1 && c === OPEN_BRACKET && ITEMS_MEMBER.test(this.captured(chunk, i))) {
      this.capture = "none";
      this.skipMember = true;
      this.inItems = true;
      this.itemsSeen = true;
      this.depth = 2;
      this.begin("item", i + 1);
      return;
    }
    this.depth++;
  }

  private close(chunk: Buffer, i: number): void {
    if (this.inItems && this.depth === 2) {
      this.endItem(chunk, i);
      this.inItems = false;
      this.depth = 1;
      return;
    }
    if (this.depth === 1) {
      this.endMember(chunk, i);
      this.depth = 0;
      this.closed = true;
      return;
    }
    if (this.depth === 0) throw new BrokenAnswerError("the list answer is not a JSON object");
    this.depth--;
  }

  private begin(capture: Capture, at: number): void {
    this.capture = capture;
    this.parts = [];
    this.partBytes = 0;
    this.start = at;
  }

  /** Keep a piece of the capture past the end of its chunk. */
  private keep(piece: Buffer): void {
    this.parts.push(piece);
    this.partBytes += piece.length;
    this.checkItemBound(this.partBytes);
  }

  /** The capture's text up to `end` in the current chunk. */
  private captured(chunk: Buffer, end: number): string {
    const last = chunk.subarray(this.start, end);
    this.checkItemBound(this.partBytes + last.length);
    return (this.parts.length === 0 ? last : Buffer.concat([...this.parts, last])).toString("utf8");
  }

  private endItem(chunk: Buffer, end: number): void {
    const text = this.captured(chunk, end);
    this.capture = "none";
    // An empty array, or the space after the last item.
    if (text.trim() === "") return;
    this.onItem(parse(text, "a list item"));
  }

  private endMember(chunk: Buffer, end: number): void {
    if (this.skipMember) {
      this.skipMember = false;
      this.capture = "none";
      return;
    }
    const text = this.captured(chunk, end);
    this.capture = "none";
    if (text.trim() === "") return;
    Object.assign(this.members, parse(`{${text}}`, "the list answer's envelope"));
  }

  private checkItemBound(bytes: number): void {
    if (bytes > this.bounds.maxItemBytes)
      throw new AnswerTooLargeError(
        "object",
        this.bounds.maxItemBytes,
        `a list item is over ${this.bounds.maxItemBytes} bytes; the answer is abandoned`,
      );
  }
}

function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}

function parse(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BrokenAnswerError(`${what} is not JSON: ${(err as Error).message}`);
  }
}
