/**
 * Dumps: sock_diag dump requests on an open connection and their answers decoded socket by socket.
 * The receive buffer and the request buffer are reused; each socket costs one object, filled straight from the
 * receive buffer (or, given DumpOptions.messages, none: its bytes are handed on).
 */
import { AddressTexts } from "../diag/address.js";
import { INET_PROTOCOLS } from "../diag/constants.js";
import { diagModule, type FamilyProtocol, writeFamilyDumpRequest } from "../diag/family-request.js";
import { checkInetDiagMsg, decodeInetDiagMsg, writeInetDumpRequest } from "../diag/inet.js";
import type { InetProtocol, InetSocket, Protocol, Socket, SocketNetns, UnixType } from "../diag/socket.js";
import { decodeUnixDiagMsg, writeUnixDumpRequest } from "../diag/unix.js";
import {
  DecodeScratch,
  DumpCursor,
  MessageWriter,
  type NetlinkConnection,
  NetlinkError,
} from "../netlink/index.js";
import { Errno, MisuseError } from "../sys/errors.js";
import { UnsupportedProtocolError } from "./errors.js";
import { type Decode, familyDecoder } from "./family-decode.js";
import type { InetDump, QueryPlan } from "./query.js";

/** Per-dump options beyond the request itself. */
export interface DumpOptions {
  /** INET_DIAG_REQ_BYTECODE program for the kernel to filter with. */
  bytecode?: Buffer | undefined;
  /** User-space check applied to every decoded inet socket (always, even with bytecode). */
  predicate?: ((s: InetSocket) => boolean) | undefined;
  /** Decode inet attributes (extensions, mark, cgroup). */
  attributes: boolean;
  /** The namespace, referred to by every socket. */
  netns?: SocketNetns | undefined;
  /**
   * Where no predicate and no attribute needs the decoded socket, each inet socket's message goes
   * here undecoded instead of becoming an object (sockdiag/promises forwards the bytes).
   */
  messages?: InetMessageSink | undefined;
  /**
   * Lists the raw sockets of a family (AF_INET, AF_INET6) in the states of a mask when the kernel
   * has no raw_diag handler, as ss falls back to /proc/net/raw: listings set it, destroys do not.
   */
  rawFromProc?: ((family: number, states: number) => readonly InetSocket[]) | undefined;
}

/** Receives an inet socket's struct inet_diag_msg, 72 bytes at `buf[offset]`, as the kernel sent it. */
export type InetMessageSink = (
  buf: Buffer,
  offset: number,
  protocol: InetProtocol,
  netns: SocketNetns | undefined,
) => void;

/**
 * The answer to one dump request, decoded a batch at a time: `pump` hands up to `max` sockets to a
 * sink and says whether more may follow. Closing it before the end leaves the rest of the answer
 * unread — the connection must then be closed, not used for another request (every caller here
 * closes it: reading on would cost as much as the whole dump).
 */
export class SocketStream implements Disposable {
  constructor(
    private readonly cursor: DumpCursor,
    private readonly decode: Decode,
    private readonly protocol: Protocol,
    private readonly onAbandon: () => void,
    /** The inet dump this stream answers (undefined: a dump of another family). */
    readonly dump?: InetDump,
  ) {}

  /** Decode up to `max` more sockets into `sink`; false once the answer is complete. */
  pump(sink: (s: Socket) => void, max = 1024): boolean {
    const cursor = this.cursor;
    try {
      for (let n = 0; n < max; n++) {
        if (!cursor.next()) {
          this.done = true;
          return false;
        }
        const s = this.decode(cursor.buf, cursor.offset, cursor.length);
        if (s) sink(s);
      }
      return true;
    } catch (err) {
      // An error answer ends the answer: nothing is left unread on the connection.
      if (err instanceof NetlinkError) this.done = true;
      // The kernel answers ENOENT when no diag handler is registered for the family or protocol
      // (net/core/sock_diag.c, net/ipv4/inet_diag.c inet_diag_lock_handler).
      if (err instanceof NetlinkError && err.errno === Errno.ENOENT) {
        throw new UnsupportedProtocolError(this.protocol, diagModule(this.protocol), err);
      }
      throw err;
    }
  }

  [Symbol.dispose](): void {
    if (!this.done) this.onAbandon();
  }

  private done = false;
}

/** A connection plus the request buffer reused for every dump sent on it. */
export class Dumper {
  // Room for the largest bytecode program (65,528 bytes); MessageWriter zeroes what it reserves.
  private readonly writer = new MessageWriter(Buffer.allocUnsafe(66 * 1024));
  /** Set when a stream was closed before its end: its answer is still queued on the connection. */
  private unread = false;
  private readonly scratch = new DecodeScratch();
  /** The request sendAhead sent, whose answer the next inet() reads. */
  private ahead: { dump: InetDump; seq: number } | undefined;

  constructor(readonly conn: NetlinkConnection) {}

  /**
   * Send the request of `dump`, the first the plan will stream, on another thread now, where the
   * connection can (see NetlinkConnection.sendInBackground): the kernel walks its table while this
   * thread works on something else, and inet() of that dump reads the answer without sending again.
   */
  sendAhead(dump: InetDump, options: DumpOptions): void {
    if (!this.conn.sendInBackground) return;
    const seq = this.conn.nextSeq();
    this.writeInet(seq, dump, options);
    this.conn.sendInBackground(this.writer.buf, this.writer.length);
    this.ahead = { dump, seq };
  }

  /** Send one inet dump request (unless sendAhead sent it) and return its answer as a stream. */
  inet(dump: InetDump, options: DumpOptions): SocketStream {
    const ahead = this.ahead;
    this.ahead = undefined;
    if (ahead && ahead.dump !== dump)
      throw new MisuseError("dump: another request than the one sent ahead, whose answer is coming");
    const seq = ahead ? ahead.seq : this.conn.nextSeq();
    if (!ahead) this.writeInet(seq, dump, options);
    const { predicate, messages, netns } = options;
    const protocol = dump.protocol;
    const start = (decode: Decode) => this.start(seq, protocol, decode, dump, ahead !== undefined);
    // A raw socket's IP protocol (INET_DIAG_PROTOCOL) is needed to destroy it: always decoded.
    const attributes = options.attributes || protocol === "raw";
    if (messages && !predicate && !attributes) {
      return start((buf, o, len) => {
        checkInetDiagMsg(buf, o, len);
        messages(buf, o, protocol, netns);
        return undefined;
      });
    }
    const decode = { protocol, attributes, netns, texts: new AddressTexts(), scratch: this.scratch };
    return start((buf, o, len) => {
      const s = decodeInetDiagMsg(buf, o, len, decode);
      return predicate && !predicate(s) ? undefined : s;
    });
  }

  /**
   * Send a unix dump request for `states` with the attributes in `show` (UDIAG_SHOW_*); only
   * sockets of `types` are kept when given (unix_diag cannot be asked for one type).
   */
  unix(
    states: number,
    show: number,
    netns: SocketNetns | undefined,
    types?: ReadonlySet<UnixType>,
  ): SocketStream {
    const seq = this.conn.nextSeq();
    writeUnixDumpRequest(this.writer.reset(), seq, states, show);
    return this.start(seq, "unix", (buf, o, len) => {
      const s = decodeUnixDiagMsg(buf, o, len, this.scratch);
      if (types && !types.has(s.type)) return undefined;
      s.netns = netns;
      return s;
    });
  }

  /**
   * Send the dump request of a family of its own (packet, netlink, vsock, tipc, xdp); only sockets
   * of `types` are kept when given.
   */
  family(
    protocol: FamilyProtocol,
    states: number,
    netns: SocketNetns | undefined,
    types?: ReadonlySet<string>,
  ): SocketStream {
    const seq = this.conn.nextSeq();
    writeFamilyDumpRequest(this.writer.reset(), seq, protocol, states);
    return this.start(seq, protocol, familyDecoder(protocol, this.conn, this.scratch, netns, types));
  }

  /** Hand every socket of the plan's dumps to `sink`, in order, without a generator per socket. */
  each(plan: QueryPlan, options: DumpOptions, sink: (s: Socket) => void): void {
    for (const _ of this.steps(plan, options, sink));
  }

  /**
   * The same as each(), one step at a time: it pauses after every batch (pump's), a dump's last
   * included, so that a caller may stop between them (an interruption), let an event loop turn or
   * take the batch before the next dump is requested.
   */
  *steps(plan: QueryPlan, options: DumpOptions, sink: (s: Socket) => void): Generator<void, void, void> {
    for (const stream of this.streams(plan, options)) {
      using s = stream;
      let more = true;
      while (more) {
        try {
          more = s.pump(sink);
        } catch (err) {
          if (!answeredFromProc(err, s, options, sink) && !skippable(plan, err)) throw err;
          more = false;
        }
        yield;
      }
    }
  }

  /** The sockets of the plan's dumps, streamed a batch at a time: memory stays flat. */
  *sockets(plan: QueryPlan, options: DumpOptions): Generator<Socket> {
    const batch: Socket[] = [];
    for (const _ of this.steps(plan, options, (s) => batch.push(s))) {
      yield* batch;
      batch.length = 0;
    }
  }

  // One dump at a time: each request is sent only when the previous answer is consumed.
  private *streams(plan: QueryPlan, options: DumpOptions): Generator<SocketStream> {
    for (const dump of plan.inet) yield this.inet(dump, options);
    if (plan.unix) yield this.unix(plan.unix.states, plan.unix.show, options.netns, plan.unix.types);
    for (const dump of plan.families)
      yield this.family(dump.protocol, dump.states, options.netns, dump.types);
  }

  private writeInet(seq: number, dump: InetDump, options: DumpOptions): void {
    writeInetDumpRequest(this.writer.reset(), seq, {
      family: dump.family,
      protocol: INET_PROTOCOLS[dump.protocol].number,
      ext: dump.ext,
      states: dump.states,
      bytecode: options.bytecode,
    });
  }

  /** A stream of the answer to request `seq`, sent now unless it was sent ahead (`sent`). */
  private start(
    seq: number,
    protocol: Protocol,
    decode: Decode,
    dump?: InetDump,
    sent = false,
  ): SocketStream {
    if (this.unread) throw new MisuseError("dump: the connection still holds an abandoned answer");
    if (!sent) this.conn.send(this.writer.buf, this.writer.length);
    const cursor = new DumpCursor(this.conn, seq, `dump ${protocol}`);
    return new SocketStream(
      cursor,
      decode,
      protocol,
      () => {
        this.unread = true;
      },
      dump,
    );
  }
}

/**
 * A raw dump the kernel has no raw_diag handler for, answered from /proc/net/raw instead when the
 * options allow it (misc/ss.c raw_show does the same when inet_show_netlink fails). The filter's
 * predicate applies as to any socket; its bytecode has nobody to run it.
 */
function answeredFromProc(
  err: unknown,
  stream: SocketStream,
  options: DumpOptions,
  sink: (s: Socket) => void,
): boolean {
  const dump = stream.dump;
  if (!(err instanceof UnsupportedProtocolError) || dump?.protocol !== "raw" || !options.rawFromProc)
    return false;
  const predicate = options.predicate;
  for (const s of options.rawFromProc(dump.family, dump.states)) if (!predicate || predicate(s)) sink(s);
  return true;
}

/** A protocol the kernel cannot list, in a query that asked to leave such protocols out. */
function skippable(plan: QueryPlan, err: unknown): boolean {
  if (!(err instanceof UnsupportedProtocolError) || !plan.ignoreUnsupported.has(err.protocol)) return false;
  plan.unsupported.add(err.protocol);
  return true;
}
