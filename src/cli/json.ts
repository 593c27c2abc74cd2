/**
 * Sockets as JSON, written as bytes while they stream in: `ls -j` of 100,000 sockets builds no
 * intermediate object or string per socket. The text is exactly stringifyForOutput(socket) (the
 * model's toJSON, which test/cli checks against this writer), plus `timer` with -o and `owners`
 * with -p.
 */
import type { InetSocket, Socket } from "../diag/socket.js";
import { HOST_NETNS_NAME } from "../netns/index.js";
import type { SocketOwner } from "../sockets/index.js";
import { AsciiWriter, ascii } from "./ascii.js";
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

/**
 * Write `sockets` as one JSON array ("json") or one object per line ("ndjson") through `write`,
 * with the `extras` asked for last in each object.
 */
export function writeJson(
  sockets: Iterable<Socket>,
  format: "json" | "ndjson",
  write: (chunk: Uint8Array) => void,
  extras: JsonExtras = {},
): void {
  const { owners, timers, reuseBuffer } = extras;
  const labels = new LabelTexts();
  const words = new Words();
  const spans = new JsonSpans();
  let out = new AsciiWriter(CHUNK + 4096);
  let first = true;
  for (const s of sockets) {
    if (format === "json") out.char(first ? 91 : 44).char(10); // "[\n" or ",\n"
    first = false;
    if (s.family === "unix" || s.hasAttributes) out.text(stringifyForOutput(s).slice(0, -1));
    else inetJson(out, s, labels, words, spans);
    if (timers && s.family !== "unix") out.text(`,"timer":${JSON.stringify(timerOf(s))}`);
    if (owners) out.text(`,"owners":${JSON.stringify(owners.get(s.inode) ?? [])}`);
    out.char(125); // }
    if (format === "ndjson") out.char(10);
    if (out.length >= CHUNK) {
      write(out.bytes());
      // Otherwise a fresh buffer per chunk: a write to a pipe may still hold the previous one.
      if (reuseBuffer) out.clear();
      else out = new AsciiWriter(CHUNK + 4096);
      spans.written = false;
    }
  }
  if (format === "json") out.text(first ? "[]\n" : "\n]\n");
  write(out.bytes());
}

// The constant parts of an inet socket's JSON, in toJSON's field order.
const K = {
  netns: ascii('{"netns":'),
  family: ascii(',"family":"'),
  protocol: ascii('","protocol":"'),
  state: ascii('","state":"'),
  src: ascii('","src":"'),
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

/** Short constant words (families, protocols, states) as bytes, encoded on first use. */
class Words {
  private readonly bytes = new Map<string, Uint8Array>();

  of(word: string): Uint8Array {
    let b = this.bytes.get(word);
    if (!b) {
      b = ascii(word);
      this.bytes.set(word, b);
    }
    return b;
  }
}

/**
 * The spans of the previous socket's JSON that the next one may repeat, in the current chunk:
 * sockets of one dump mostly share their namespace, state and local address, often their remote
 * address, and nearly always their queues and timer fields.
 */
class JsonSpans {
  /** Whether the spans below are in the current chunk. */
  written = false;
  // '{"netns":...,"sport":' for these values.
  netns: string | undefined;
  family = "";
  protocol = "";
  state = "";
  src = "";
  headAt = 0;
  headLen = 0;
  // ',"dst":"...","dport":'
  dst = "";
  dstAt = 0;
  dstLen = 0;
  // ',"uid":...,"expires":N'
  uid = -1;
  rqueue = 0;
  wqueue = 0;
  timer = 0;
  retrans = 0;
  expires = 0;
  tailAt = 0;
  tailLen = 0;
}

/** JSON.stringify(s) of an inet socket without attributes, less its closing brace. */
function inetJson(out: AsciiWriter, s: InetSocket, labels: LabelTexts, words: Words, spans: JsonSpans): void {
  const fresh = !spans.written;
  spans.written = true;
  if (
    !fresh &&
    s.src === spans.src &&
    s.netns?.label === spans.netns &&
    s.state === spans.state &&
    s.protocol === spans.protocol &&
    s.family === spans.family
  )
    out.again(spans.headAt, spans.headLen);
  else {
    const at = out.length;
    out.raw(K.netns).text(labels.json(s.netns?.label));
    out.raw(K.family).raw(words.of(s.family));
    out.raw(K.protocol).raw(words.of(s.protocol));
    out.raw(K.state).raw(words.of(s.state));
    out.raw(K.src).text(s.src).raw(K.sport);
    spans.netns = s.netns?.label;
    spans.family = s.family;
    spans.protocol = s.protocol;
    spans.state = s.state;
    spans.src = s.src;
    spans.headAt = at;
    spans.headLen = out.length - at;
  }
  out.uint(s.sport);
  if (!fresh && s.dst === spans.dst) out.again(spans.dstAt, spans.dstLen);
  else {
    const at = out.length;
    out.raw(K.dst).text(s.dst).raw(K.dport);
    spans.dst = s.dst;
    spans.dstAt = at;
    spans.dstLen = out.length - at;
  }
  out.uint(s.dport);
  out.raw(K.ifindex).uint(s.ifindex);
  out.raw(K.cookie);
  const hi = s.cookieHi;
  if (hi < 0x200000) out.uint(hi * 4294967296 + s.cookieLo);
  else out.text(s.cookie.toString());
  out.raw(K.inode).uint(s.inode);
  if (
    !fresh &&
    s.uid === spans.uid &&
    s.rqueue === spans.rqueue &&
    s.wqueue === spans.wqueue &&
    s.timer === spans.timer &&
    s.retrans === spans.retrans &&
    s.expires === spans.expires
  )
    out.again(spans.tailAt, spans.tailLen);
  else {
    const at = out.length;
    out.raw(K.uid).uint(s.uid);
    out.raw(K.rqueue).uint(s.rqueue);
    out.raw(K.wqueue).uint(s.wqueue);
    out.raw(K.timer).uint(s.timer);
    out.raw(K.retrans).uint(s.retrans);
    out.raw(K.expires).uint(s.expires);
    spans.uid = s.uid;
    spans.rqueue = s.rqueue;
    spans.wqueue = s.wqueue;
    spans.timer = s.timer;
    spans.retrans = s.retrans;
    spans.expires = s.expires;
    spans.tailAt = at;
    spans.tailLen = out.length - at;
  }
}

/** Namespace labels as JSON strings; a listing repeats each for thousands of sockets. */
class LabelTexts {
  private last: string | undefined;
  private lastJson = JSON.stringify(HOST_NETNS_NAME);

  json(label: string | undefined): string {
    if (label !== this.last) {
      this.last = label;
      this.lastJson = JSON.stringify(label ?? HOST_NETNS_NAME);
    }
    return this.lastJson;
  }
}
