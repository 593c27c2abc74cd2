/**
 * The socket-finding program: an `iter/task_file` tracing program run once for every open file of
 * every task (the kernel skips a thread sharing its leader's file table). Of every UDP socket it
 * meets that has a local port — those sockstat's `UDP: inuse` and `UDP6: inuse` count
 * (udp_lib_get_port hashes a socket and sets it; udp_lib_unhash clears it) — it writes a held
 * record (record.ts: its namespace, family and inode number), for user space to count each socket
 * once by namespace: counting in the kernel took a hash-map insert per socket, most of the pass.
 * For a socket of one of the wanted protocols whose destination address and port are a key of
 * the backend map, it writes a found record. Everything else it passes over. Each record goes out with
 * bpf_seq_write.
 */
import { Assembler, FP, type Reg, type Width } from "./asm.js";
import type { Field, TaskFileLayout } from "./layout.js";
import { Record, RecordKind } from "./record.js";

const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO_TCP = 6;
const IPPROTO_UDP = 17;
const SOCK_DGRAM = 2;
/** The first address word of a v4-mapped address, ::ffff:0:0 (bytes 00 00 ff ff), as a little-endian store. */
const V4_MAPPED_WORD = 0xffff0000;

const CTX: Reg = 6;
const FILE: Reg = 7;
const SK: Reg = 8;
/** The socket's type (SOCK_DGRAM, ...): kept through the helper calls. */
const TYPE: Reg = 9;
/** The record is built on the stack, at the frame's bottom. */
const REC = -Record.size;

export interface ProgramOptions {
  readonly layout: TaskFileLayout;
  /** The backend map: KEY_SIZE-byte keys (record.ts), any value. */
  readonly mapFd: number;
  /** IP protocol numbers to report (IPPROTO_UDP, IPPROTO_TCP). */
  readonly protocols: readonly number[];
  /** The backends' ports: a socket to another port is passed over before anything else is read. */
  readonly ports: readonly number[];
}

/** Beyond this many distinct ports, the map alone decides. */
const MAX_INLINE_PORTS = 64;

/** A field's load or store, its width checked by the layout. */
const width = (field: Field): Width => field.size as Width;

/** seq_write(ctx->meta->seq, fp + at, size): a record built on the stack goes out (CTX holds ctx). */
function seqWrite(a: Assembler, f: TaskFileLayout["fields"], at: number, size: number): void {
  a.load(8, 1, CTX, f.ctxMeta.offset).load(8, 1, 1, f.metaSeq.offset);
  a.mov(2, FP).addImm(2, at).movImm(3, size).call("seq_write");
}

/** The program's instructions. */
export function socketFinderProgram(options: ProgramOptions): Buffer {
  const { layout, mapFd, protocols, ports } = options;
  const a = new Assembler();
  const f = layout.fields;
  // r3 = *(src + field); *(rec + at) = r3
  const copy = (src: Reg, field: Field, at: number, extra = 0): void => {
    const w = field.size === 16 ? 4 : width(field);
    a.load(w, 3, src, field.offset + extra).store(w, FP, REC + at + extra, 3);
  };

  a.mov(CTX, 1);
  a.load(8, FILE, CTX, f.ctxFile.offset).jumpIf(FILE, "==", 0, "out");
  a.mov(1, FILE).call("sock_from_file").jumpIf(0, "==", 0, "out");
  a.load(8, SK, 0, f.socketSk.offset).jumpIf(SK, "==", 0, "out");
  // A UDP socket is a datagram one: unless TCP is wanted, any other (TCP, a Unix stream) is
  // passed over on its socket's line, already read, before a cache miss on any line of its sock.
  a.load(width(f.socketType), TYPE, 0, f.socketType.offset);
  if (!protocols.includes(IPPROTO_TCP)) a.jumpIf(TYPE, "!=", SOCK_DGRAM, "out");

  // The header both kinds of record begin with.
  copy(SK, f.family, Record.family);
  a.load(8, 1, SK, f.net.offset);
  copy(1, f.netInum, Record.netns);
  a.load(8, 1, FILE, f.fileInode.offset);
  copy(1, f.inodeIno, Record.inode);
  // A UDP socket with a local port: held (a raw socket of protocol UDP is not one).
  a.load(width(f.protocol), 3, SK, f.protocol.offset).jumpIf(3, "!=", IPPROTO_UDP, "held");
  a.jumpIf(TYPE, "!=", SOCK_DGRAM, "held");
  a.load(width(f.num), 3, SK, f.num.offset).jumpIf(3, "==", 0, "held");
  a.storeImm(2, FP, REC + Record.kind, RecordKind.held);
  seqWrite(a, f, REC, Record.heldSize);
  a.label("held");

  const distinct = [...new Set(ports)];
  if (distinct.length > 0 && distinct.length <= MAX_INLINE_PORTS) {
    // skc_dport is in network order: loaded little-endian, a port reads byte-swapped.
    a.load(width(f.dport), 3, SK, f.dport.offset);
    for (const port of distinct) a.jumpIf(3, "==", ((port & 0xff) << 8) | (port >>> 8), "port");
    a.jump("out").label("port");
  }

  a.load(width(f.protocol), 3, SK, f.protocol.offset);
  for (const protocol of protocols) a.jumpIf(3, "==", protocol, "wanted");
  a.jump("out");
  a.label("wanted").store(2, FP, REC + Record.protocol, 3);
  a.load(width(f.family), 3, SK, f.family.offset);
  a.jumpIf(3, "==", AF_INET, "v4").jumpIf(3, "!=", AF_INET6, "out");
  for (let i = 0; i < 16; i += 4) {
    copy(SK, f.v6RcvSaddr, Record.src, i);
    copy(SK, f.v6Daddr, Record.dst, i);
  }
  a.jump("addresses");
  a.label("v4");
  for (const [at, field] of [
    [Record.src, f.rcvSaddr],
    [Record.dst, f.daddr],
  ] as const) {
    a.storeImm(4, FP, REC + at, 0)
      .storeImm(4, FP, REC + at + 4, 0)
      .storeImm(4, FP, REC + at + 8, V4_MAPPED_WORD);
    copy(SK, field, at + 12);
  }
  a.label("addresses");
  copy(SK, f.dport, Record.dport);

  a.loadMap(1, mapFd)
    .mov(2, FP)
    .addImm(2, REC + Record.dst)
    .call("map_lookup_elem")
    .jumpIf(0, "==", 0, "out");

  a.storeImm(2, FP, REC + Record.kind, RecordKind.found);
  copy(SK, f.num, Record.sport);
  copy(SK, f.boundDevIf, Record.boundIfindex);
  copy(SK, f.type, Record.type);
  a.storeImm(4, FP, REC + Record.state, 0);
  copy(SK, f.state, Record.state);
  copy(CTX, f.ctxFd, Record.fd);
  a.load(8, 1, CTX, f.ctxTask.offset).jumpIf(1, "==", 0, "out");
  copy(1, f.taskTgid, Record.tgid);
  // 0 when nothing asked for it yet (get_socket_cookie, which would make it, refuses the
  // untrusted pointer socket->sk is to the verifier).
  copy(SK, f.cookie, Record.cookie);
  seqWrite(a, f, REC, Record.size);
  a.label("out").movImm(0, 0).exit();
  return a.build();
}

/** A socket inode record of socketInodesProgram: the low 32 bits of its inode number, in host order. */
export const INODE_RECORD_SIZE = 4;

/**
 * The second pass's program: of every socket file it meets, the inode number (its low 32 bits)
 * and nothing else — no line of the socket or its sock is read, only the file's and its inode's.
 */
export function socketInodesProgram(layout: TaskFileLayout): Buffer {
  const a = new Assembler();
  const f = layout.fields;
  a.mov(CTX, 1);
  a.load(8, FILE, CTX, f.ctxFile.offset).jumpIf(FILE, "==", 0, "out");
  a.mov(1, FILE).call("sock_from_file").jumpIf(0, "==", 0, "out");
  a.load(8, 1, FILE, f.fileInode.offset).load(4, 3, 1, f.inodeIno.offset).store(4, FP, -8, 3);
  seqWrite(a, f, -8, INODE_RECORD_SIZE);
  a.label("out").movImm(0, 0).exit();
  return a.build();
}
