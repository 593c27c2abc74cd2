/**
 * The ss-like table: one row per socket, columns padded to their widest cell, and ss's extra
 * detail (-e, -m, -i, -p) after the row.
 */
import type { InetSocket, Socket, UnixSocket } from "../diag/socket.js";
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

/** ss's text for one endpoint: "10.0.0.1:53", "[::1]:53", "*" for port 0. */
function endpoint(address: string, port: number, family: string): string {
  const host = family === "inet6" ? `[${address}]` : address;
  return `${host}:${port === 0 ? "*" : port}`;
}

export interface TableOptions {
  display: Display;
  header: boolean;
  /** Add a Netns column (listing several namespaces). */
  netnsColumn: boolean;
  owners?: Map<number, SocketOwner[]> | undefined;
}

/** Render sockets as ss's table, ending with a newline (empty string when there is nothing to print). */
export function renderTable(sockets: readonly Socket[], options: TableOptions): string {
  const headers = ["Netid", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port"];
  if (options.netnsColumn) headers.unshift("Netns");
  const rows: string[][] = [];
  const tails: string[] = [];
  for (const s of sockets) {
    const row = s.family === "unix" ? unixCells(s) : inetCells(s);
    if (options.netnsColumn) row.unshift(s.netns ?? "(host)");
    rows.push(row);
    tails.push(details(s, options));
  }
  const all = options.header ? [headers, ...rows] : rows;
  if (all.length === 0) return "";
  const widths = headers.map((_, c) => Math.max(...all.map((r) => r[c]!.length)));
  // Numbers and local addresses align right, as ss aligns them.
  const right = new Set(options.netnsColumn ? [3, 4, 5] : [2, 3, 4]);
  const lines: string[] = [];
  all.forEach((row, r) => {
    const cells = row.map((cell, c) => (right.has(c) ? cell.padStart(widths[c]!) : cell.padEnd(widths[c]!)));
    const tail = options.header
      ? r === 0
        ? options.display.processes
          ? " Process"
          : ""
        : tails[r - 1]
      : tails[r];
    lines.push(`${cells.join(" ")}${tail ?? ""}`.trimEnd());
  });
  return `${lines.join("\n")}\n`;
}

function inetCells(s: InetSocket): string[] {
  return [
    s.protocol,
    STATE_LABELS[s.state],
    String(s.rqueue),
    String(s.wqueue),
    endpoint(s.src, s.sport, s.family),
    endpoint(s.dst, s.dport, s.family),
  ];
}

function unixCells(s: UnixSocket): string[] {
  return [
    UNIX_NETIDS[s.type],
    STATE_LABELS[s.state],
    String(s.rqueue),
    String(s.wqueue),
    `${s.name ?? "*"} ${s.inode}`,
    `* ${s.peer ?? 0}`,
  ];
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
  if (options.display.info && s.family !== "unix") {
    if (s.cong) parts.push(s.cong);
    const t = s.tcpinfo;
    if (t) {
      if (t.rto !== undefined) parts.push(`rto:${Number(t.rto) / 1000}`);
      if (t.rtt !== undefined) parts.push(`rtt:${Number(t.rtt) / 1000}/${Number(t.rttvar) / 1000}`);
      if (t.sndMss !== undefined) parts.push(`mss:${t.sndMss}`);
      if (t.sndCwnd !== undefined) parts.push(`cwnd:${t.sndCwnd}`);
      if (t.bytesAcked !== undefined) parts.push(`bytes_acked:${t.bytesAcked}`);
      if (t.bytesReceived !== undefined) parts.push(`bytes_received:${t.bytesReceived}`);
    }
  }
  return parts.length > 0 ? ` ${parts.join(" ")}` : "";
}
