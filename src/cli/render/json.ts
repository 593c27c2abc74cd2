/**
 * Sockets as JSON, written as bytes while they stream in: `ls -j` of 100,000 sockets builds no
 * intermediate object or string per socket. The text is exactly stringifyForOutput(socket) (the
 * model's toJSON, which test/cli checks against this writer), plus `timer` with -o and `owners`
 * with -p.
 */
import type { InetSocket, Socket } from "../../diag/socket.js";
import { HOST_NETNS_NAME } from "../../netns/index.js";
import type { SocketOwner } from "../../sockets/index.js";
import { AsciiWriter, ascii, Span } from "./ascii.js";
import { timerOf } from "./timers.js";

/** Bytes per write to stdout. */
const CHUNK = 1 << 20;

/** What JSON output adds to each socket's fields. */
export interface JsonExtras {
  /** -p: an `owners` array of { pid, command, fd } (empty when no process holds the socket). */
  owners?: ReadonlyMap<number, readonly SocketOwner[]> | undefined;
  /** -o: a `timer` object { name, expiresMs, retrans } for inet sockets. */
  timers?: boolean;
  /**
   * `write` is done with a chunk when it returns (a synchronous write to stdout): one buffer then
   * serves every chunk instead of a fresh one each.
   */
  reuseBuffer?: boolean;
}

/**
 * JSON.stringify for CLI output: the caller's own namespace, which the library leaves unnamed
 * (null), is called HOST_NETNS_NAME, as in every other output.
 */
export function stringifyForOutput(value: unknown, space?: number): string {
  return JSON.stringify(value, (key, v) => (key === "netns" && v == null ? HOST_NETNS_NAME : v), space);
}

/** Sockets to print: an array, or a listing handing its sockets over as they stream in. */
export interface SocketSource {
  forEach(sink: (s: Socket) => void): void;
}

/**
 * JsonWriter writes sockets as one JSON array ("json") or one object per line ("ndjson") through
 * `write`, a chunk at a time, with the `extras` asked for last in each object.
 */
class JsonWriter {
  private readonly heads = new HeadTexts();
  private readonly spans = new JsonSpans();
  private out = new AsciiWriter(CHUNK + 4096);
  private first = true;

  constructor(
    private readonly format: "json" | "ndjson",
    private readonly write: (chunk: Uint8Array) => void,
    private readonly extras: JsonExtras = {},
  ) {}

  add(s: Socket): void {
    const { out, spans, extras } = this;
    if (this.format === "json") out.char(this.first ? 91 : 44).char(10); // "[\n" or ",\n"
    this.first = false;
    const inet = s.family === "inet" || s.family === "inet6";
    if (!inet || s.hasAttributes) {
      out.text(stringifyForOutput(s).slice(0, -1));
      spans.previous = undefined;
    } else inetJson(out, s, this.heads, spans);
    if (extras.timers && inet) out.text(`,"timer":${JSON.stringify(timerOf(s))}`);
    if (extras.owners) out.text(`,"owners":${JSON.stringify(extras.owners.get(s.inode) ?? [])}`);
    out.char(125); // }
    if (this.format === "ndjson") out.char(10);
    if (out.length >= CHUNK) {
      this.write(out.bytes());
      // Otherwise a fresh buffer per chunk: a write to a pipe may still hold the previous one.
      if (extras.reuseBuffer) out.clear();
      else this.out = new AsciiWriter(CHUNK + 4096);
      spans.previous = undefined;
    }
  }

  /** Write the rest (and close the array). */
  end(): void {
    if (this.format === "json") this.out.text(this.first ? "[]\n" : "\n]\n");
    this.write(this.out.bytes());
  }
}

/** Write `sockets` through a JsonWriter. */
export function writeJson(
  sockets: SocketSource,
  format: "json" | "ndjson",
  write: (chunk: Uint8Array) => void,
  extras: JsonExtras = {},
): void {
  const writer = new JsonWriter(format, write, extras);
  sockets.forEach((s) => {
    writer.add(s);
  });
  writer.end();
}

// The constant parts of an inet socket's JSON after its head, in toJSON's field order.
const K = {
  sport: ascii('","sport":'),
  dst: ascii(',"dst":"'),
  dport: ascii('","dport":'),
  ifindex: ascii(',"ifindex":'),
  cookie: ascii(',"cookie":"'),
  inode: ascii('","inode":'),
  uid: ascii(',"uid":'),
  rqueue: ascii(',"rqueue":'),
  wqueue: ascii(',"wqueue":'),
  timer: ascii(',"timer":'),
  retrans: ascii(',"retrans":'),
  expires: ascii(',"expires":'),
};

/**
 * The constant start of an inet socket's JSON, '{"netns":…,"family":…,"protocol":…,"state":…,"src":"',
 * as bytes: a dump repeats one namespace, family and protocol, in a few states.
 */
class HeadTexts {
  private label: string | undefined;
  private family = "";
  private protocol = "";
  private byState = new Map<string, Uint8Array>();

  of(s: InetSocket): Uint8Array {
    const label = s.netns?.label;
    if (label !== this.label || s.family !== this.family || s.protocol !== this.protocol) {
      this.label = label;
      this.family = s.family;
      this.protocol = s.protocol;
      this.byState = new Map();
    }
    let head = this.byState.get(s.state);
    if (!head) {
      const netns = JSON.stringify(label ?? HOST_NETNS_NAME);
      head = ascii(
        `{"netns":${netns},"family":"${s.family}","protocol":"${s.protocol}","state":"${s.state}","src":"`,
      );
      this.byState.set(s.state, head);
    }
    return head;
  }
}

/**
 * Where, in the current chunk, the previous socket's repeatable spans are: sockets of one dump
 * mostly share their namespace, state and local address, often their remote address, and nearly
 * always their queues and timer fields — the next socket copies what it shares with the previous.
 */
class JsonSpans {
  /** The previous socket written by inetJson in this chunk. */
  previous: InetSocket | undefined;
  /** '{"netns":...,"sport":' */
  readonly head = new Span();
  /** ',"dst":"...","dport":' */
  readonly dst = new Span();
  /** ',"uid":...,"expires":N' */
  readonly tail = new Span();
}

/** JSON.stringify(s) of an inet socket without attributes, less its closing brace. */
function inetJson(out: AsciiWriter, s: InetSocket, heads: HeadTexts, spans: JsonSpans): void {
  const p = spans.previous;
  spans.previous = s;
  if (
    p &&
    s.src === p.src &&
    s.state === p.state &&
    s.protocol === p.protocol &&
    s.family === p.family &&
    s.netns?.label === p.netns?.label
  )
    out.repeat(spans.head);
  else out.begin(spans.head).raw(heads.of(s)).text(s.src).raw(K.sport).end(spans.head);
  out.uint(s.sport);
  if (p && s.dst === p.dst) out.repeat(spans.dst);
  else out.begin(spans.dst).raw(K.dst).text(s.dst).raw(K.dport).end(spans.dst);
  out.uint(s.dport);
  out.raw(K.ifindex).uint(s.ifindex);
  out.raw(K.cookie);
  if (s.cookie <= Number.MAX_SAFE_INTEGER) out.uint(Number(s.cookie));
  else out.text(s.cookie.toString());
  out.raw(K.inode).uint(s.inode);
  if (
    p &&
    s.uid === p.uid &&
    s.rqueue === p.rqueue &&
    s.wqueue === p.wqueue &&
    s.timer === p.timer &&
    s.retrans === p.retrans &&
    s.expires === p.expires
  )
    out.repeat(spans.tail);
  else {
    out.begin(spans.tail);
    out.raw(K.uid).uint(s.uid);
    out.raw(K.rqueue).uint(s.rqueue);
    out.raw(K.wqueue).uint(s.wqueue);
    out.raw(K.timer).uint(s.timer);
    out.raw(K.retrans).uint(s.retrans);
    out.raw(K.expires).uint(s.expires).end(spans.tail);
  }
}
