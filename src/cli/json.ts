/**
 * Sockets as JSON, written as bytes while they stream in: `ls -j` of 100,000 sockets builds no
 * intermediate object or string per socket. The text is exactly JSON.stringify(socket) (the model's
 * toJSON, which test/cli checks against this writer), plus `owners` with -p.
 */
import type { InetSocket, Socket } from "../diag/socket.js";
import type { SocketOwner } from "../sockets/index.js";
import { AddressTexts } from "./addresses.js";
import { AsciiWriter } from "./ascii.js";

/** Bytes per write to stdout. */
const CHUNK = 1 << 20;

/**
 * Write `sockets` as one JSON array ("json") or one object per line ("ndjson") through `write`.
 * With `owners` (-p), each object ends with an `owners` array of { pid, command, fd }.
 */
export function writeJson(
  sockets: Iterable<Socket>,
  format: "json" | "ndjson",
  write: (chunk: Uint8Array) => void,
  owners?: ReadonlyMap<number, readonly SocketOwner[]>,
): void {
  const addresses = new AddressTexts();
  const labels = new LabelTexts();
  let out = new AsciiWriter(CHUNK + 4096);
  let first = true;
  for (const s of sockets) {
    if (format === "json") out.text(first ? "[\n" : ",\n");
    first = false;
    if (s.family === "unix" || s.hasAttributes) out.text(JSON.stringify(s).slice(0, -1));
    else inetJson(out, s, addresses, labels);
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

/** JSON.stringify(s) of an inet socket without attributes, less its closing brace. */
function inetJson(out: AsciiWriter, s: InetSocket, addresses: AddressTexts, labels: LabelTexts): void {
  out.text('{"netns":').text(labels.json(s.netns));
  out.text(',"family":"').text(s.family);
  out.text('","protocol":"').text(s.protocol);
  out.text('","state":"').text(s.state);
  out.text('","src":"').text(addresses.src(s));
  out.text('","sport":').uint(s.sport);
  out.text(',"dst":"').text(addresses.dst(s));
  out.text('","dport":').uint(s.dport);
  out.text(',"ifindex":').uint(s.ifindex);
  out.text(',"cookie":"');
  const hi = s.cookieHi;
  if (hi < 0x200000) out.uint(hi * 4294967296 + s.cookieLo);
  else out.text(s.cookie.toString());
  out.text('","inode":').uint(s.inode);
  out.text(',"uid":').uint(s.uid);
  out.text(',"rqueue":').uint(s.rqueue);
  out.text(',"wqueue":').uint(s.wqueue);
}

/** Namespace labels as JSON strings; a listing repeats each for thousands of sockets. */
class LabelTexts {
  private last: string | undefined;
  private lastJson = "null";

  json(label: string | undefined): string {
    if (label !== this.last) {
      this.last = label;
      this.lastJson = label === undefined ? "null" : JSON.stringify(label);
    }
    return this.lastJson;
  }
}
