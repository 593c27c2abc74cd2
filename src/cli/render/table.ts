/**
 * The ss-like table: one row per socket, columns padded to their widest cell, and ss's extra
 * detail (-e, -m, -i, -p) after the row. Built for 100,000 rows streaming in: each row is written
 * once, as bytes, when its socket comes.
 */
import type { InetSocket, Socket } from "../../diag/socket.js";
import type { StateName } from "../../diag/states.js";
import { HOST_NETNS_NAME } from "../../netns/index.js";
import type { SocketOwner } from "../../sockets/index.js";
import type { CgroupPaths, Display } from "../select/index.js";
import { AsciiWriter, digits, Span } from "./ascii.js";
import { escapeText } from "./escape.js";
import {
  endpointCells,
  familyDetails,
  netid,
  netlinkDetails,
  packetDetails,
  skmemText,
} from "./family-rows.js";
import type { SocketSource } from "./json.js";
import { timerText } from "./timers.js";

const STATE_TEXT: Readonly<Record<StateName, string>> = {
  unknown: "UNKNOWN",
  established: "ESTAB",
  "syn-sent": "SYN-SENT",
  "syn-recv": "SYN-RECV",
  "fin-wait-1": "FIN-WAIT-1",
  "fin-wait-2": "FIN-WAIT-2",
  "time-wait": "TIME-WAIT",
  close: "UNCONN",
  "close-wait": "CLOSE-WAIT",
  "last-ack": "LAST-ACK",
  listening: "LISTEN",
  closing: "CLOSING",
  "new-syn-recv": "NEW-SYN-RECV",
  "bound-inactive": "BOUND-INACTIVE",
};
// A Map, not the object: looking up a name not met before does not throw away optimised code.
const STATE_LABELS = new Map(Object.entries(STATE_TEXT)) as ReadonlyMap<StateName, string>;

export interface TableOptions {
  display: Display;
  header: boolean;
  /** Add a Netns column (listing several namespaces). */
  netnsColumn: boolean;
  owners?: Map<number, SocketOwner[]> | undefined;
  /** Names cgroup ids for --cgroup and -e. */
  cgroups?: CgroupPaths | undefined;
}

const HEADERS = ["Netns", "Netid", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port"];
const COLON = 58;
const NEWLINE = 10;
const STAR = 42;

/**
 * How many bytes of rows a streamed listing holds before writing them: as ss renders its buffered
 * fields every few megabytes, a listing of any length reuses one buffer this size instead of
 * touching new memory for every row.
 */
export const LISTING_BATCH_BYTES = 1 << 20;

/** Where a streamed table writes each batch of rows (synchronously: the bytes are reused after). */
export type TableSink = (bytes: Uint8Array) => void;

/** Per row: the byte lengths of its cells (HEADERS' order) and of its detail text. */
const CELLS = HEADERS.length;
const STRIDE = CELLS + 1;
const DETAILS = CELLS;
const PEER = CELLS - 1;
/** The columns padded on the left: Recv-Q, Send-Q, Local Address:Port. */
const RIGHT_ALIGNED = [false, false, false, true, true, true, false];

/** ss's width of an endpoint: host (bracketed for IPv6), ":", and the port ("*" for 0). */
function endpointWidth(s: InetSocket, host: string, port: number): number {
  return host.length + (s.family === "inet" ? 1 : 3) + (port === 0 ? 1 : digits(port));
}

/**
 * TableWriter builds ss's table one socket at a time, so that a listing is rendered while it
 * streams in and no socket outlives its row. Each row is written at once, padded to the widest
 * cells so far; the rare rows written before a column grew are padded again by `finish` (columns
 * start as wide as their headers, and reach their width within the first rows of a dump).
 * Neighbouring rows mostly share their leading cells and local address, often their peer: those
 * are copied from the previous row instead of being formatted again.
 */
export class TableWriter {
  private readonly out: AsciiWriter;
  private lengths = new Int32Array(STRIDE * 1024);
  private rows = 0;
  private readonly widths: number[];
  /** The widths rows were padded to: each from its `row` on, until the next one's. */
  private readonly runs: { row: number; widths: readonly number[] }[] = [];
  private readonly first: number;
  private readonly wantsDetails: boolean;
  private readonly spans = new RowSpans();
  private headerWritten = false;
  /** The buffer stale rows are padded again into, kept from batch to batch. */
  private repadded: AsciiWriter | undefined;

  /**
   * Without a sink the whole table is kept until `finish`, every row padded to the widest cells of
   * all. With one, every LISTING_BATCH_BYTES of rows are written to it as ss writes a long listing:
   * padded to the widest cells so far, which later rows keep or grow.
   */
  constructor(
    private readonly options: TableOptions,
    private readonly sink?: TableSink,
  ) {
    this.out = new AsciiWriter(sink ? LISTING_BATCH_BYTES + (1 << 12) : 1 << 16);
    // As wide as the headers also under -H: the rows are the same with and without it.
    this.widths = HEADERS.map((h) => h.length);
    this.first = options.netnsColumn ? 0 : 1;
    const d = options.display;
    this.wantsDetails =
      d.options || d.extended || d.memory || d.info || d.processes || Boolean(d.cgroup || d.tipcinfo);
  }

  /** Add the row of one socket. */
  add(s: Socket): void {
    if ((this.rows + 1) * STRIDE > this.lengths.length) {
      const bigger = new Int32Array(this.lengths.length * 2);
      bigger.set(this.lengths);
      this.lengths = bigger;
    }
    const lengths = this.lengths;
    const r = this.rows * STRIDE;
    const label = this.options.netnsColumn ? escapeText(s.netns?.label ?? HOST_NETNS_NAME) : "";
    const id = netid(s);
    const state = STATE_LABELS.get(s.state)!;
    lengths[r] = byteLength(label);
    lengths[r + 1] = id.length;
    lengths[r + 2] = state.length;
    lengths[r + 3] = queueWidth(s.rqueue);
    lengths[r + 4] = queueWidth(s.wqueue);
    // A unix, packet or netlink socket's whole local and peer cells (inet cells are written from their fields).
    const inet = s.family === "inet" || s.family === "inet6";
    let local = "";
    let peer = "";
    if (inet) {
      lengths[r + 5] = endpointWidth(s, s.src, s.sport);
      lengths[r + PEER] = endpointWidth(s, s.dst, s.dport);
    } else {
      [local, peer] = endpointCells(s as Exclude<Socket, InetSocket>);
      lengths[r + 5] = byteLength(local);
      lengths[r + PEER] = byteLength(peer);
    }
    const widths = this.widths;
    let grew = this.rows === 0;
    for (let c = this.first; c < CELLS; c++)
      if (lengths[r + c]! > widths[c]!) {
        widths[c] = lengths[r + c]!;
        grew = true;
      }
    if (grew) this.runs.push({ row: this.rows, widths: [...widths] });
    this.rows++;

    const out = this.out;
    const spans = this.spans;
    const p = spans.previous;
    spans.previous = s;
    // The previous row's head is this one's when its cells are the same and no column grew.
    if (
      !grew &&
      p &&
      s.rqueue === p.rqueue &&
      s.wqueue === p.wqueue &&
      s.state === p.state &&
      id === netid(p) &&
      (!this.options.netnsColumn || label === escapeText(p.netns?.label ?? HOST_NETNS_NAME))
    )
      out.repeat(spans.head);
    else {
      out.begin(spans.head);
      if (this.options.netnsColumn) cell(out, label, widths[0]!);
      cell(out, id, widths[1]!);
      cell(out, state, widths[2]!);
      queue(out.spaces(widths[3]! - lengths[r + 3]!), s.rqueue).char(32);
      queue(out.spaces(widths[4]! - lengths[r + 4]!), s.wqueue)
        .char(32)
        .end(spans.head);
    }
    out.spaces(widths[5]! - lengths[r + 5]!);
    if (!inet) out.text(local).char(32).text(peer);
    else {
      const inet = p && p.family === s.family ? (p as InetSocket) : undefined;
      if (inet && s.src === inet.src) out.repeat(spans.local);
      else host(out.begin(spans.local), s, s.src).end(spans.local);
      port(out, s.sport).char(32);
      if (inet && s.dst === inet.dst && s.dport === inet.dport) out.repeat(spans.peer);
      else port(host(out.begin(spans.peer), s, s.dst), s.dport).end(spans.peer);
    }
    lengths[r + DETAILS] = 0;
    if (this.wantsDetails) {
      const pad = widths[PEER]! - lengths[r + PEER]!;
      const at = out.length + pad;
      out.spaces(pad).text(details(s, this.options)).trimEnd();
      if (out.length > at) lengths[r + DETAILS] = out.length - at;
    }
    out.char(NEWLINE);
    if (this.sink && out.length >= LISTING_BATCH_BYTES) this.writeBatch(this.sink);
  }

  /**
   * The table (with a sink: what is left of it) as chunks of bytes to write in order (none when
   * there is no row and no header): every cell padded to its column's widest, numbers and local
   * addresses aligned right as ss aligns them, every line ending with a newline.
   */
  finish(): Uint8Array[] {
    return this.render();
  }

  /** Write the rows so far to `sink` and start the next batch in the same buffers. */
  private writeBatch(sink: TableSink): void {
    for (const chunk of this.render()) sink(chunk);
    this.out.clear();
    this.rows = 0;
    this.runs.length = 0;
    this.spans.previous = undefined;
  }

  /** The header (once) and the rows held, padded to the widths so far. */
  private render(): Uint8Array[] {
    const { rows, widths, options, first } = this;
    const chunks: Uint8Array[] = [];
    if (options.header && !this.headerWritten) {
      this.headerWritten = true;
      const cells = HEADERS.slice(first).map((h, c) => align(h, widths[c + first]!, c + first));
      chunks.push(
        Buffer.from(`${`${cells.join(" ")}${options.display.processes ? " Process" : ""}`.trimEnd()}\n`),
      );
    }
    if (rows === 0) return chunks;
    // The rows before the last column grew were padded to narrower columns.
    const stale = this.runs.at(-1)!.row;
    const written = this.out.bytes();
    if (stale === 0) chunks.push(written);
    else {
      const { padded, end } = this.padAgain(written, stale);
      chunks.push(padded, written.subarray(end));
    }
    return chunks;
  }

  /**
   * The first `count` rows of `src` padded to the final widths, and where they end in `src`. A run
   * of rows padded to the same widths has its cells at the same places in each row: the spaces a
   * grown column needs go at one place per column (after a left-aligned cell's padding, before a
   * right-aligned one's), and the bytes between those places are copied whole.
   */
  private padAgain(src: Buffer, count: number): { padded: Buffer; end: number } {
    const { lengths, widths, runs, first } = this;
    this.repadded ??= new AsciiWriter(src.length);
    const out = this.repadded.clear();
    let p = 0;
    for (let row = 0, run = 0; row < count; run++) {
      const old = runs[run]!.widths;
      // Where spaces go in each row of the run (offsets from the row's start), and how many.
      const places: number[] = [];
      const extra: number[] = [];
      let cellsEnd = 0;
      for (let c = first; c < PEER; c++) {
        if (widths[c]! > old[c]!) {
          places.push(RIGHT_ALIGNED[c] ? cellsEnd : cellsEnd + old[c]!);
          extra.push(widths[c]! - old[c]!);
        }
        cellsEnd += old[c]! + 1;
      }
      const peerExtra = widths[PEER]! - old[PEER]!;
      for (const end = runs[run + 1]!.row; row < end; row++) {
        const r = row * STRIDE;
        const peer = lengths[r + PEER]!;
        const detail = lengths[r + DETAILS]!;
        let at = p;
        for (let i = 0; i < places.length; i++) {
          out.copy(src, at, p + places[i]! - at).spaces(extra[i]!);
          at = p + places[i]!;
        }
        p += cellsEnd + peer;
        if (detail > 0) {
          // The peer cell is padded only before details: the place after its padding.
          p += old[PEER]! - peer;
          out.copy(src, at, p - at).spaces(peerExtra);
          at = p;
          p += detail;
        }
        p++; // the newline
        out.copy(src, at, p - at);
      }
    }
    return { padded: out.bytes(), end: p };
  }
}

/** Render sockets as ss's table, as bytes to write (empty when there is nothing to print). */
export function renderTable(sockets: SocketSource, options: TableOptions): Buffer {
  const table = new TableWriter(options);
  sockets.forEach((s) => {
    table.add(s);
  });
  return Buffer.concat(table.finish());
}

/**
 * Where the previous row's repeatable cells are: rows of one dump mostly share their leading
 * cells and local address, often their peer — a row copies what it shares with the previous one.
 */
class RowSpans {
  previous: Socket | undefined;
  /** The Netns, Netid, State, Recv-Q and Send-Q cells, padded. */
  readonly head = new Span();
  /** The local host text (bracketed for IPv6). */
  readonly local = new Span();
  /** The whole peer endpoint, host and port. */
  readonly peer = new Span();
}

/**
 * A queue length as ss prints it, a C int: the kernel's u32 past 2^31 reads negative — a socket
 * being freed (watch, ss -E) has a Send-Q of -1 (sk_wmem_alloc, already 0, less one).
 */
function queue(out: AsciiWriter, n: number): AsciiWriter {
  const signed = n | 0;
  return signed < 0 ? out.char(45).uint(-signed) : out.uint(n);
}

function queueWidth(n: number): number {
  const signed = n | 0;
  return signed < 0 ? 1 + digits(-signed) : digits(n);
}

/** A left-aligned cell and its separating space. */
function cell(out: AsciiWriter, text: string, width: number): void {
  out.text(text).spaces(width - byteLength(text) + 1);
}

/**
 * The UTF-8 bytes of a cell (a unix path, a namespace name may be any): widths and the places
 * `padAgain` finds in the written rows are counted in bytes, as ss counts its columns.
 */
function byteLength(text: string): number {
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) > 127) return Buffer.byteLength(text);
  return text.length;
}

/** A host as ss's table shows it: IPv6 hosts in brackets. */
function host(out: AsciiWriter, s: InetSocket, text: string): AsciiWriter {
  return s.family === "inet" ? out.text(text) : out.char(91).text(text).char(93);
}

/** ":" and the port, "*" for 0. */
function port(out: AsciiWriter, port: number): AsciiWriter {
  out.char(COLON);
  return port === 0 ? out.char(STAR) : out.uint(port);
}

// Header cells: numbers and local addresses align right, as ss aligns them.
function align(text: string, width: number, column: number): string {
  return RIGHT_ALIGNED[column] ? text.padStart(width) : text.padEnd(width);
}

/** ss puts -m and -i details on a second line, after a tab, unless -O. */
const SECOND_LINE = "\n\t";

function details(s: Socket, options: TableOptions): string {
  const parts: string[] = [];
  const d = options.display;
  const owners = options.owners?.get(s.inode);
  if (d.processes && owners) {
    const tid = (o: SocketOwner) => (o.tid === undefined ? "" : `,tid=${o.tid}`);
    parts.push(
      `users:(${owners.map((o) => `("${escapeText(o.command)}",pid=${o.pid}${tid(o)},fd=${o.fd})`).join(",")})`,
    );
  }
  const inet = s.family === "inet" || s.family === "inet6";
  if (d.options && inet) {
    const timer = timerText(s);
    if (timer) parts.push(timer);
  }
  if (s.family === "vsock" || s.family === "tipc" || s.family === "xdp")
    return familyDetails(s, d, spaced(parts));
  const more: string[] = [];
  if (d.extended) {
    if (s.family === "netlink") parts.push(netlinkDetails(s));
    else {
      // ss's sock_details_print leaves out a packet socket's uid 0.
      if (s.uid !== undefined && (s.family !== "packet" || s.uid !== 0)) parts.push(`uid:${s.uid}`);
      parts.push(`ino:${s.inode}`);
      // Cookie 0: a raw socket read from /proc/net/raw, which has none (the kernel's start at 1).
      if (s.cookie !== 0n) parts.push(`sk:${s.cookie.toString(16)}`);
    }
    if (s.family === "packet") more.push(...packetDetails(s));
  }
  if ((d.extended || d.cgroup) && inet && s.cgroupId !== undefined && options.cgroups)
    parts.push(`cgroup:${escapeText(options.cgroups.path(s.cgroupId))}`);
  if (d.memory && s.skmem) more.push(skmemText(s.skmem));
  if (d.info && inet) more.push(...tcpDetails(s));
  const line = spaced(parts);
  if (more.length === 0) return line;
  return `${line}${d.oneline ? "" : SECOND_LINE} ${more.join(" ")}`;
}

/** Each part after a space. */
function spaced(parts: readonly string[]): string {
  return parts.length > 0 ? ` ${parts.join(" ")}` : "";
}

function tcpDetails(s: InetSocket): string[] {
  const parts: string[] = [];
  if (s.cong) parts.push(s.cong);
  const t = s.tcpinfo;
  if (!t) return parts;
  if (t.rto !== undefined) parts.push(`rto:${Number(t.rto) / 1000}`);
  if (t.rtt !== undefined) parts.push(`rtt:${Number(t.rtt) / 1000}/${Number(t.rttvar) / 1000}`);
  if (t.sndMss !== undefined) parts.push(`mss:${t.sndMss}`);
  if (t.sndCwnd !== undefined) parts.push(`cwnd:${t.sndCwnd}`);
  if (t.bytesAcked !== undefined) parts.push(`bytes_acked:${t.bytesAcked}`);
  if (t.bytesReceived !== undefined) parts.push(`bytes_received:${t.bytesReceived}`);
  return parts;
}
