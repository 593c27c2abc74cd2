/**
 * The ss-like table: one row per socket, columns padded to their widest cell, and ss's extra
 * detail (-e, -m, -i, -p) after the row. Built for 100,000 rows: cells are computed once, widths
 * in the same pass, and lines are joined into chunks rather than one array per row.
 */
import type { InetSocket, Socket } from "../diag/socket.js";
import type { StateName } from "../diag/states.js";
import { HOST_NETNS_NAME } from "../netns/index.js";
import type { SocketOwner } from "../sockets/index.js";
import { AsciiWriter, digits } from "./ascii.js";
import type { Display } from "./select.js";
import { timerText } from "./timers.js";

const STATE_LABELS: Readonly<Record<StateName, string>> = {
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

const UNIX_NETIDS = { stream: "u_str", dgram: "u_dgr", seqpacket: "u_seq" } as const;

export interface TableOptions {
  display: Display;
  header: boolean;
  /** Add a Netns column (listing several namespaces). */
  netnsColumn: boolean;
  owners?: Map<number, SocketOwner[]> | undefined;
}

const HEADERS = ["Netns", "Netid", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port"];
const COLON = 58;
const NEWLINE = 10;
const STAR = 42;

/** ss's width of an endpoint: host, ":", and the port ("*" for 0). */
function endpointWidth(host: string, port: number): number {
  return host.length + 1 + (port === 0 ? 1 : digits(port));
}

/**
 * Render sockets as ss's table, as bytes to write (empty when there is nothing to print). Every
 * line ends with a newline. Cells are measured in a first pass and written straight into one buffer
 * in a second: no string is built per cell or per line.
 */
export function renderTable(sockets: readonly Socket[], options: TableOptions): Buffer {
  const n = sockets.length;
  if (n === 0 && !options.header) return Buffer.alloc(0);
  // Local and peer "host" text per socket; for unix sockets, the whole cell.
  const locals = new Array<string>(n);
  const peers = new Array<string>(n);
  const first = options.netnsColumn ? 0 : 1;
  const widths = HEADERS.map((h) => (options.header ? h.length : 0));
  for (let i = 0; i < n; i++) {
    const s = sockets[i]!;
    let localWidth: number;
    let peerWidth: number;
    if (s.family === "unix") {
      locals[i] = `${s.name ?? "*"} ${s.inode}`;
      peers[i] = `* ${s.peer ?? 0}`;
      localWidth = locals[i]!.length;
      peerWidth = peers[i]!.length;
    } else {
      // ss brackets IPv6 hosts in its table.
      locals[i] = s.family === "inet" ? s.src : `[${s.src}]`;
      peers[i] = s.family === "inet" ? s.dst : `[${s.dst}]`;
      localWidth = endpointWidth(locals[i]!, s.sport);
      peerWidth = endpointWidth(peers[i]!, s.dport);
    }
    if (options.netnsColumn) widths[0] = Math.max(widths[0]!, (s.netns?.label ?? HOST_NETNS_NAME).length);
    widths[1] = Math.max(widths[1]!, netid(s).length);
    widths[2] = Math.max(widths[2]!, STATE_LABELS[s.state].length);
    widths[3] = Math.max(widths[3]!, digits(s.rqueue));
    widths[4] = Math.max(widths[4]!, digits(s.wqueue));
    widths[5] = Math.max(widths[5]!, localWidth);
    widths[6] = Math.max(widths[6]!, peerWidth);
  }
  const lineWidth = widths.reduce((a, b) => a + b + 1, 0);
  const out = new AsciiWriter((n + 1) * (lineWidth + 1));
  if (options.header) {
    const cells = HEADERS.slice(first).map((h, c) => align(h, widths[c + first]!, c + first));
    out.text(`${cells.join(" ")}${options.display.processes ? " Process" : ""}`.trimEnd()).char(NEWLINE);
  }
  const wantsDetails =
    options.display.options ||
    options.display.extended ||
    options.display.memory ||
    options.display.info ||
    options.display.processes;
  for (let i = 0; i < n; i++) {
    const s = sockets[i]!;
    if (options.netnsColumn) cell(out, s.netns?.label ?? HOST_NETNS_NAME, widths[0]!);
    cell(out, netid(s), widths[1]!);
    cell(out, STATE_LABELS[s.state], widths[2]!);
    out
      .spaces(widths[3]! - digits(s.rqueue))
      .uint(s.rqueue)
      .char(32);
    out
      .spaces(widths[4]! - digits(s.wqueue))
      .uint(s.wqueue)
      .char(32);
    let peerWidth: number;
    if (s.family === "unix") {
      out
        .spaces(widths[5]! - locals[i]!.length)
        .text(locals[i]!)
        .char(32)
        .text(peers[i]!);
      peerWidth = peers[i]!.length;
    } else {
      out.spaces(widths[5]! - endpointWidth(locals[i]!, s.sport));
      endpoint(out, locals[i]!, s.sport).char(32);
      endpoint(out, peers[i]!, s.dport);
      peerWidth = endpointWidth(peers[i]!, s.dport);
    }
    if (wantsDetails)
      out
        .spaces(widths[6]! - peerWidth)
        .text(details(s, options))
        .trimEnd();
    out.char(NEWLINE);
  }
  return out.bytes();
}

/** A left-aligned cell and its separating space. */
function cell(out: AsciiWriter, text: string, width: number): void {
  out.text(text).spaces(width - text.length + 1);
}

function endpoint(out: AsciiWriter, host: string, port: number): AsciiWriter {
  out.text(host).char(COLON);
  return port === 0 ? out.char(STAR) : out.uint(port);
}

function netid(s: Socket): string {
  return s.family === "unix" ? UNIX_NETIDS[s.type] : s.protocol;
}

// Header cells: numbers and local addresses align right, as ss aligns them.
function align(text: string, width: number, column: number): string {
  return column >= 3 && column <= 5 ? text.padStart(width) : text.padEnd(width);
}

function details(s: Socket, options: TableOptions): string {
  const parts: string[] = [];
  const owners = options.owners?.get(s.inode);
  if (options.display.processes && owners) {
    parts.push(`users:(${owners.map((o) => `("${o.command}",pid=${o.pid},fd=${o.fd})`).join(",")})`);
  }
  if (options.display.options && s.family !== "unix") {
    const timer = timerText(s);
    if (timer) parts.push(timer);
  }
  if (options.display.extended) {
    if (s.uid !== undefined) parts.push(`uid:${s.uid}`);
    parts.push(`ino:${s.inode}`, `sk:${s.cookie.toString(16)}`);
  }
  if (options.display.memory && s.skmem) {
    const m = s.skmem;
    parts.push(
      `skmem:(r${m.rmemAlloc},rb${m.rcvbuf},t${m.wmemAlloc},tb${m.sndbuf},f${m.fwdAlloc},w${m.wmemQueued},o${m.optmem},bl${m.backlog}${m.drops === undefined ? "" : `,d${m.drops}`})`,
    );
  }
  if (options.display.info && s.family !== "unix") parts.push(...tcpDetails(s));
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
