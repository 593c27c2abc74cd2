/**
 * The ss-like table: one row per socket, columns padded to their widest cell, and ss's extra
 * detail (-e, -m, -i, -p) after the row. Built for 100,000 rows: cells are computed once, widths
 * in the same pass, and lines are joined into chunks rather than one array per row.
 */
import { formatIPv4 } from "../diag/address.js";
import type { InetSocket, Socket } from "../diag/socket.js";
import type { StateName } from "../diag/states.js";
import type { SocketOwner } from "../sockets/index.js";
import type { Display } from "./select.js";

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
const LINES_PER_CHUNK = 2048;
const pads: string[] = [""];
function pad(n: number): string {
  while (pads.length <= n) pads.push(`${pads[pads.length - 1]} `);
  return pads[n]!;
}

/** ss's text for one endpoint: "10.0.0.1:53", "[::1]:53", port 0 as "*". */
function endpoint(host: string, port: number): string {
  return port === 0 ? `${host}:*` : `${host}:${port}`;
}

/** Endpoint texts of inet sockets, IPv4 addresses memoised (a listing repeats a few of them). */
class Endpoints {
  private readonly v4 = new Map<number, string>();

  local(s: InetSocket): string {
    return endpoint(s.family === "inet" ? this.ipv4(s.src0) : `[${s.src}]`, s.sport);
  }

  peer(s: InetSocket): string {
    return endpoint(s.family === "inet" ? this.ipv4(s.dst0) : `[${s.dst}]`, s.dport);
  }

  private ipv4(word: number): string {
    let text = this.v4.get(word);
    if (text === undefined) {
      text = formatIPv4(word);
      if (this.v4.size < 65536) this.v4.set(word, text);
    }
    return text;
  }
}

/**
 * Render sockets as ss's table, as chunks of text to write in order (empty when there is nothing
 * to print). Every line ends with a newline.
 */
export function renderTable(sockets: readonly Socket[], options: TableOptions): string[] {
  const n = sockets.length;
  if (n === 0 && !options.header) return [];
  const endpoints = new Endpoints();
  const locals = new Array<string>(n);
  const peers = new Array<string>(n);
  const first = options.netnsColumn ? 0 : 1;
  const widths = HEADERS.map((h) => (options.header ? h.length : 0));
  for (let i = 0; i < n; i++) {
    const s = sockets[i]!;
    let local: string;
    let peer: string;
    if (s.family === "unix") {
      local = `${s.name ?? "*"} ${s.inode}`;
      peer = `* ${s.peer ?? 0}`;
    } else {
      local = endpoints.local(s);
      peer = endpoints.peer(s);
    }
    locals[i] = local;
    peers[i] = peer;
    if (options.netnsColumn) widths[0] = Math.max(widths[0]!, (s.netns ?? "(host)").length);
    widths[1] = Math.max(widths[1]!, netid(s).length);
    widths[2] = Math.max(widths[2]!, STATE_LABELS[s.state].length);
    widths[3] = Math.max(widths[3]!, digits(s.rqueue));
    widths[4] = Math.max(widths[4]!, digits(s.wqueue));
    widths[5] = Math.max(widths[5]!, local.length);
    widths[6] = Math.max(widths[6]!, peer.length);
  }
  const chunks: string[] = [];
  const lines: string[] = [];
  if (options.header) {
    const cells = HEADERS.slice(first).map((h, c) => align(h, widths[c + first]!, c + first));
    lines.push(`${cells.join(" ")}${options.display.processes ? " Process" : ""}`.trimEnd());
  }
  const wantsDetails =
    options.display.extended || options.display.memory || options.display.info || options.display.processes;
  for (let i = 0; i < n; i++) {
    const s = sockets[i]!;
    let line = options.netnsColumn ? left(s.netns ?? "(host)", widths[0]!) : "";
    line += `${left(netid(s), widths[1]!)}${left(STATE_LABELS[s.state], widths[2]!)}`;
    line += `${right(String(s.rqueue), widths[3]!)} ${right(String(s.wqueue), widths[4]!)} `;
    line += `${right(locals[i]!, widths[5]!)} ${peers[i]!}`;
    if (wantsDetails) line = `${line}${pad(widths[6]! - peers[i]!.length)}${details(s, options)}`.trimEnd();
    lines.push(line);
    if (lines.length === LINES_PER_CHUNK) {
      chunks.push(`${lines.join("\n")}\n`);
      lines.length = 0;
    }
  }
  if (lines.length > 0) chunks.push(`${lines.join("\n")}\n`);
  return chunks;
}

function netid(s: Socket): string {
  return s.family === "unix" ? UNIX_NETIDS[s.type] : s.protocol;
}

function digits(n: number): number {
  return n < 10 ? 1 : n < 100 ? 2 : n < 1000 ? 3 : String(n).length;
}

/** A left-aligned cell followed by its separating space. */
function left(text: string, width: number): string {
  return `${text}${pad(width - text.length + 1)}`;
}

function right(text: string, width: number): string {
  return `${pad(width - text.length)}${text}`;
}

// Header cells: numbers and local addresses align right, as ss aligns them.
function align(text: string, width: number, column: number): string {
  return column >= 3 && column <= 5 ? right(text, width) : text.padEnd(width);
}

function details(s: Socket, options: TableOptions): string {
  const parts: string[] = [];
  const owners = options.owners?.get(s.inode);
  if (options.display.processes && owners) {
    parts.push(`users:(${owners.map((o) => `("${o.command}",pid=${o.pid},fd=${o.fd})`).join(",")})`);
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
