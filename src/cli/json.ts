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
  const { owners, timers } = extras;
  const labels = new LabelTexts();
  const words = new Words();
  let out = new AsciiWriter(CHUNK + 4096);
  let first = true;
  for (const s of sockets) {
    if (format === "json") out.text(first ? "[\n" : ",\n");
    first = false;
    if (s.family === "unix" || s.hasAttributes) out.text(stringifyForOutput(s).slice(0, -1));
    else inetJson(out, s, labels, words);
    if (timers && s.family !== "unix") out.text(`,"timer":${JSON.stringify(timerOf(s))}`);
    if (owners) out.text(`,"owners":${JSON.stringify(owners.get(s.inode) ?? [])}`);
    out.char(125); // }
    if (format === "ndjson") out.char(10);
    if (out.length >= CHUNK) {
      // A fresh buffer per chunk: a write to a pipe may still hold the previous one.
      write(out.bytes());
      out = new AsciiWriter(CHUNK + 4096);
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

/** JSON.stringify(s) of an inet socket without attributes, less its closing brace. */
function inetJson(out: AsciiWriter, s: InetSocket, labels: LabelTexts, words: Words): void {
  out.raw(K.netns).text(labels.json(s.netns?.label));
  out.raw(K.family).raw(words.of(s.family));
  out.raw(K.protocol).raw(words.of(s.protocol));
  out.raw(K.state).raw(words.of(s.state));
  out.raw(K.src).text(s.src);
  out.raw(K.sport).uint(s.sport);
  out.raw(K.dst).text(s.dst);
  out.raw(K.dport).uint(s.dport);
  out.raw(K.ifindex).uint(s.ifindex);
  out.raw(K.cookie);
  const hi = s.cookieHi;
  if (hi < 0x200000) out.uint(hi * 4294967296 + s.cookieLo);
  else out.text(s.cookie.toString());
  out.raw(K.inode).uint(s.inode);
  out.raw(K.uid).uint(s.uid);
  out.raw(K.rqueue).uint(s.rqueue);
  out.raw(K.wqueue).uint(s.wqueue);
  out.raw(K.timer).uint(s.timer);
  out.raw(K.retrans).uint(s.retrans);
  out.raw(K.expires).uint(s.expires);
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
