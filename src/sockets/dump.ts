/**
 * Dumps: one sock_diag dump request on an open connection, its answer decoded socket by socket.
 * The receive buffer and the request buffer are reused; each socket costs one object.
 */
import { decodeInetDiagMsg, writeInetDumpRequest } from "../diag/inet.js";
import type { InetSocket, Socket, UnixSocket } from "../diag/socket.js";
import { decodeUnixDiagMsg, writeUnixDumpRequest } from "../diag/unix.js";
import { DumpCursor, MessageWriter, NetlinkError, type NetlinkSocket } from "../netlink/index.js";
import { Errno } from "../sys/errors.js";
import { UnsupportedProtocolError } from "./errors.js";
import { INET_PROTOCOLS } from "./protocols.js";
import type { InetDump } from "./query.js";

/** Per-dump options beyond the request itself. */
export interface DumpOptions {
  /** INET_DIAG_REQ_BYTECODE program for the kernel to filter with. */
  bytecode?: Buffer | undefined;
  /** User-space check applied to every decoded inet socket (always, even with bytecode). */
  predicate?: ((s: InetSocket) => boolean) | undefined;
  /** Decode inet attributes (extensions, mark, cgroup). */
  attributes: boolean;
  /** Label of the namespace, copied onto every socket. */
  netns?: string | undefined;
}

/** A connection plus the request buffer reused for every dump sent on it. */
export class Dumper {
  private readonly writer: MessageWriter;

  constructor(readonly conn: NetlinkSocket) {
    this.writer = new MessageWriter(Buffer.alloc(64 * 1024));
  }

  /** Dump one inet protocol/family; throws UnsupportedProtocolError when the kernel has no handler. */
  *inet(dump: InetDump, options: DumpOptions): Generator<InetSocket> {
    const seq = this.conn.nextSeq();
    writeInetDumpRequest(this.writer.reset(), seq, {
      family: dump.family,
      protocol: INET_PROTOCOLS[dump.protocol].number,
      ext: dump.ext,
      states: dump.states,
      bytecode: options.bytecode,
    });
    const decode = { protocol: dump.protocol, attributes: options.attributes };
    const { predicate, netns } = options;
    using cursor = this.start(seq, `dump ${dump.protocol}`);
    let chunk = -1;
    let copy = cursor.buf;
    try {
      while (cursor.next()) {
        if (cursor.received !== chunk) {
          // Sockets read their fields from the bytes they came in: one copy per chunk, not per socket.
          chunk = cursor.received;
          copy = Buffer.from(cursor.buf.subarray(0, cursor.chunkLength));
        }
        const s = decodeInetDiagMsg(copy, cursor.offset, cursor.length, decode);
        if (predicate && !predicate(s)) continue;
        s.netns = netns;
        yield s;
      }
    } catch (err) {
      throw unsupported(err, dump.protocol, INET_PROTOCOLS[dump.protocol].module);
    }
  }

  /** Dump unix sockets in `states`, with the attributes selected by `show` (UDIAG_SHOW_*). */
  *unix(states: number, show: number, netns: string | undefined): Generator<UnixSocket> {
    const seq = this.conn.nextSeq();
    writeUnixDumpRequest(this.writer.reset(), seq, states, show);
    using cursor = this.start(seq, "dump unix");
    try {
      while (cursor.next()) {
        const s = decodeUnixDiagMsg(cursor.buf, cursor.offset, cursor.length);
        s.netns = netns;
        yield s;
      }
    } catch (err) {
      throw unsupported(err, "unix", "unix_diag");
    }
  }

  private start(seq: number, op: string): DumpCursor {
    this.conn.send(this.writer.buf, this.writer.length);
    return new DumpCursor(this.conn, seq, op);
  }
}

// The kernel answers ENOENT when no diag handler is registered for the family or protocol
// (net/core/sock_diag.c, net/ipv4/inet_diag.c inet_diag_lock_handler).
function unsupported(err: unknown, protocol: Socket["protocol"], module: string): unknown {
  if (err instanceof NetlinkError && err.errno === Errno.ENOENT)
    return new UnsupportedProtocolError(protocol, module);
  return err;
}
