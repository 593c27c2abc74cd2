/**
 * Dumps: sock_diag dump requests on an open connection, their answers decoded socket by socket,
 * and Scan, one namespace's part of a query (its connection and its compiled filter). The receive
 * buffer and the request buffer are reused; each socket costs one object, filled straight from the
 * receive buffer (or, given DumpOptions.messages, none: its bytes are handed on).
 */
import { AddressTexts } from "../diag/address.js";
import {
  INET_PROTOCOLS,
  NETLINK_SOCK_DIAG,
  TCP_CLOSE_WAIT,
  TCP_CLOSING,
  TCP_ESTABLISHED,
  TCP_FIN_WAIT1,
  TCP_FIN_WAIT2,
  TCP_LAST_ACK,
  TCP_LISTEN,
  TCP_SYN_SENT,
  TCP_TIME_WAIT,
} from "../diag/constants.js";
import { diagModule, type FamilyProtocol, writeFamilyDumpRequest } from "../diag/family-request.js";
import { checkInetDiagMsg, decodeInetDiagMsg, writeInetDumpRequest } from "../diag/inet.js";
import { decodeProcRaw } from "../diag/proc-raw.js";
import type { InetProtocol, InetSocket, Protocol, Socket, SocketNetns, UnixType } from "../diag/socket.js";
import { decodeUnixDiagMsg, writeUnixDumpRequest } from "../diag/unix.js";
import { compileIn } from "../filter/index.js";
import {
  DecodeScratch,
  DumpCursor,
  MessageWriter,
  type NetlinkConnection,
  NetlinkError,
  NetlinkSocket,
} from "../netlink/index.js";
import {
  inNetns,
  openNetlinkIn,
  readProcNet,
  readSockstat,
  type SocketCounts,
  type Target,
  threadNetns,
} from "../netns/index.js";
import { Errno, MisuseError } from "../sys/errors.js";
import { AF_INET } from "../sys/socket.js";
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
   * The same as each(), one step at a time: it pauses after every receive batch, so that a caller
   * may stop between them (an interruption) or let an event loop turn.
   */
  *steps(plan: QueryPlan, options: DumpOptions, sink: (s: Socket) => void): Generator<void, void, void> {
    for (const stream of this.streams(plan, options)) {
      using s = stream;
      for (let more = true; more; ) {
        try {
          more = s.pump(sink);
        } catch (err) {
          if (!answeredFromProc(err, s, options, sink) && !skippable(plan, err)) throw err;
          more = false;
        }
        if (more) yield;
      }
    }
  }

  /** The sockets of the plan's dumps, streamed a batch at a time: memory stays flat. */
  *sockets(plan: QueryPlan, options: DumpOptions): Generator<Socket> {
    const batch: Socket[] = [];
    const push = (s: Socket) => {
      batch.push(s);
    };
    for (const stream of this.streams(plan, options)) {
      using s = stream;
      for (let more = true; more; ) {
        batch.length = 0;
        try {
          more = s.pump(push);
        } catch (err) {
          if (!answeredFromProc(err, s, options, push) && !skippable(plan, err)) throw err;
          more = false;
        }
        yield* batch;
      }
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

/**
 * Scan: one namespace's part of a query — a netlink socket opened there, and the filter compiled
 * there (its `dev` names and port range are that namespace's). Listing and destroying both start
 * from one.
 */
export class Scan implements Disposable {
  readonly conn: NetlinkConnection;
  readonly dumper: Dumper;
  readonly options: DumpOptions;
  /** The query's plan without the dumps this namespace's counters show empty. */
  readonly plan: QueryPlan;

  /**
   * Open the socket in `target` (reading its socket counters on the way) and compile `plan`'s
   * filter there. The caller closes the scan.
   */
  constructor(
    readonly target: Target,
    plan: QueryPlan,
  ) {
    // The counters are read only where they can leave a dump out (`ls -t -a` needs none).
    const counted = plan.inet.some(countable);
    // One visit of the namespace for everything that has to be done inside it.
    const { conn, counts, compiled } = inNetns(target.netns, () => {
      const counts = counted ? readSockstat() : undefined;
      const compiled = compileIn(plan.filter, undefined);
      return { counts, compiled, conn: NetlinkSocket.open(NETLINK_SOCK_DIAG) };
    });
    this.conn = conn;
    this.plan = counts ? withoutEmptyDumps(plan, counts) : plan;
    this.dumper = new Dumper(this.conn);
    this.options = { attributes: plan.attributes, netns: target.ref, ...compiled };
  }

  /**
   * The options of a listing: the dumps' own, and the raw sockets of /proc/net/raw (read in the
   * target namespace) for a kernel without raw_diag. A destroy keeps `options`: from /proc a raw
   * socket can be listed, never destroyed.
   */
  listingOptions(): DumpOptions {
    const { target } = this;
    const netns = this.options.netns;
    return {
      ...this.options,
      rawFromProc: (family, states) => {
        const v4 = family === AF_INET;
        const text = inNetns(target.netns, () => readProcNet(v4 ? "raw" : "raw6"));
        return text === undefined ? [] : decodeProcRaw(text, v4 ? "inet" : "inet6", states, netns);
      },
    };
  }

  /** The namespace's counters leave nothing of the plan to dump here. */
  get empty(): boolean {
    const { inet, unix, families } = this.plan;
    return inet.length === 0 && !unix && families.length === 0;
  }

  /**
   * Start the first dump of the plan on another thread (see Dumper.sendAhead); the scan's steps read
   * it. Not from inside a runIn callback: libuv starts its pool's threads on first use, and a
   * thread starts in the namespace of the one that made it.
   */
  sendAhead(): void {
    const first = this.plan.inet[0];
    if (first && !threadNetns.away) this.dumper.sendAhead(first, this.options);
  }

  /** Another netlink socket in the same namespace; the caller owns it. */
  openAnother(): NetlinkConnection {
    return openNetlinkIn(this.target.netns, NETLINK_SOCK_DIAG);
  }

  [Symbol.dispose](): void {
    this.conn.close();
  }
}

/** The counters whose "inuse" counts every socket a dump of the protocol can list, by family. */
const COUNTERS: Partial<Record<InetProtocol, readonly [inet: string, inet6: string]>> = {
  tcp: ["TCP", "TCP6"],
  udp: ["UDP", "UDP6"],
  udplite: ["UDPLITE", "UDPLITE6"],
};

/**
 * The TCP states whose sockets the counters count: hashed ones in "inuse", TIME-WAIT in "tw". Not
 * SYN-RECV (request sockets, uncounted), CLOSE and BOUND-INACTIVE (bound only, in no hash the
 * counter follows): a dump asking for any of those is always made.
 */
const COUNTED_TCP_STATES =
  (1 << TCP_ESTABLISHED) |
  (1 << TCP_SYN_SENT) |
  (1 << TCP_FIN_WAIT1) |
  (1 << TCP_FIN_WAIT2) |
  (1 << TCP_TIME_WAIT) |
  (1 << TCP_CLOSE_WAIT) |
  (1 << TCP_LAST_ACK) |
  (1 << TCP_LISTEN) |
  (1 << TCP_CLOSING);

/** Whether the counters can tell that `dump` would list nothing here. */
function countable(dump: InetDump): boolean {
  if (COUNTERS[dump.protocol] === undefined) return false;
  return dump.protocol !== "tcp" || (dump.states & ~COUNTED_TCP_STATES) === 0;
}

/** Whether the namespace's counters show that `dump` would list nothing (a countable dump). */
function countedEmpty(dump: InetDump, counts: SocketCounts): boolean {
  const name = COUNTERS[dump.protocol]![dump.family === AF_INET ? 0 : 1];
  if (counts.get(name) !== 0) return false;
  return dump.protocol !== "tcp" || (dump.states & (1 << TCP_TIME_WAIT)) === 0 || counts.get("TCP tw") === 0;
}

/**
 * `plan` without the dumps of a protocol and family whose counters are 0 here. The same plan when
 * nothing is left out.
 */
function withoutEmptyDumps(plan: QueryPlan, counts: SocketCounts): QueryPlan {
  const empty = (d: InetDump) => countable(d) && countedEmpty(d, counts);
  if (!plan.inet.some(empty)) return plan;
  return { ...plan, inet: plan.inet.filter((d) => !empty(d)) };
}
