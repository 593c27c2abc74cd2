/**
 * The socket-finding program: an `iter/task_file` tracing program run once for every open file of
 * every task (the kernel skips a thread sharing its leader's file table). For a socket of one of
 * the wanted protocols whose destination address and port are a key of the backend map, it writes
 * one record (record.ts) with bpf_seq_write; everything else it passes over. Before that, it counts
 * every UDP socket it meets that has a local port — those sockstat's `UDP: inuse` and `UDP6: inuse`
 * count (udp_lib_get_port hashes a socket and sets it; udp_lib_unhash clears it) — by its
 * namespace and family, each socket once: its inode number goes into the held map first, and only
 * a socket new there is counted. A socket the maps have no room for goes uncounted: a count is
 * never more than the sockets tasks hold.
 */
import { Assembler, FP, type Reg, type Width } from "./asm.js";
import type { Field, TaskFileLayout } from "./layout.js";
import { Record } from "./record.js";

const AF_INET = 2;
const AF_INET6 = 10;
const IPPROTO_UDP = 17;
const BPF_NOEXIST = 1;
/** The first address word of a v4-mapped address, ::ffff:0:0 (bytes 00 00 ff ff), as a little-endian store. */
const V4_MAPPED_WORD = 0xffff0000;

const CTX: Reg = 6;
const FILE: Reg = 7;
const SK: Reg = 8;
/** The record is built on the stack, at the frame's bottom; the maps' keys and values below it. */
const REC = -Record.size;
const HELD_KEY = REC - 8; // u64 inode number
const HELD_VALUE = REC - 16; // u8
const COUNT_KEY = REC - 24; // u32 namespace
const COUNT_VALUE = REC - 32; // u32 IPv4, u32 IPv6

/** The counts map's value: UDP sockets tasks hold in a namespace, by family. */
export const HeldCount = { v4: 0, v6: 4, size: 8 } as const;

export interface ProgramOptions {
  readonly layout: TaskFileLayout;
  /** The backend map: KEY_SIZE-byte keys (record.ts), any value. */
  readonly mapFd: number;
  /** IP protocol numbers to report (IPPROTO_UDP, IPPROTO_TCP). */
  readonly protocols: readonly number[];
  /** The backends' ports: a socket to another port is passed over before anything else is read. */
  readonly ports: readonly number[];
  /** Held UDP sockets seen: u64 inode number keys, u8 values. */
  readonly heldMapFd: number;
  /** Held UDP sockets counted: u32 namespace (ns.inum) keys, HeldCount values. */
  readonly countsMapFd: number;
}

/** Beyond this many distinct ports, the map alone decides. */
const MAX_INLINE_PORTS = 64;

/** A field's load or store, its width checked by the layout. */
const width = (field: Field): Width => field.size as Width;

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
  countHeld(a, layout, options);
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
  a.load(width(f.family), 3, SK, f.family.offset).store(2, FP, REC + Record.family, 3);
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

  copy(SK, f.num, Record.sport);
  copy(SK, f.boundDevIf, Record.boundIfindex);
  copy(SK, f.type, Record.type);
  copy(SK, f.state, Record.state);
  a.storeImm(1, FP, REC + Record.state + 1, 0).storeImm(4, FP, REC + Record.state + 2, 0);
  a.load(8, 1, SK, f.net.offset);
  copy(1, f.netInum, Record.netns);
  copy(CTX, f.ctxFd, Record.fd);
  a.load(8, 1, CTX, f.ctxTask.offset).jumpIf(1, "==", 0, "out");
  copy(1, f.taskTgid, Record.tgid);
  a.load(8, 1, FILE, f.fileInode.offset);
  copy(1, f.inodeIno, Record.inode);
  copy(SK, f.cookie, Record.cookie);

  a.load(8, 1, CTX, f.ctxMeta.offset).load(8, 1, 1, f.metaSeq.offset);
  a.mov(2, FP).addImm(2, REC).movImm(3, Record.size).call("seq_write");
  a.label("out").movImm(0, 0).exit();
  return a.build();
}

/** Counts the socket in SK (at "match" afterwards): a UDP one with a local port, first seen. */
function countHeld(a: Assembler, { fields: f }: TaskFileLayout, options: ProgramOptions): void {
  a.load(width(f.protocol), 3, SK, f.protocol.offset).jumpIf(3, "!=", IPPROTO_UDP, "match");
  a.load(width(f.num), 3, SK, f.num.offset).jumpIf(3, "==", 0, "match");
  // Seen already (another descriptor or task holds it), or no room to remember it: not counted.
  a.load(8, 1, FILE, f.fileInode.offset).load(width(f.inodeIno), 1, 1, f.inodeIno.offset);
  a.store(8, FP, HELD_KEY, 1).storeImm(1, FP, HELD_VALUE, 1);
  a.loadMap(1, options.heldMapFd).mov(2, FP).addImm(2, HELD_KEY).mov(3, FP).addImm(3, HELD_VALUE);
  a.movImm(4, BPF_NOEXIST).call("map_update_elem").jumpIf(0, "!=", 0, "match");

  a.load(8, 1, SK, f.net.offset).load(width(f.netInum), 1, 1, f.netInum.offset);
  a.store(4, FP, COUNT_KEY, 1);
  const lookup = () =>
    a.loadMap(1, options.countsMapFd).mov(2, FP).addImm(2, COUNT_KEY).call("map_lookup_elem");
  lookup().jumpIf(0, "!=", 0, "count");
  a.storeImm(4, FP, COUNT_VALUE + HeldCount.v4, 0).storeImm(4, FP, COUNT_VALUE + HeldCount.v6, 0);
  a.loadMap(1, options.countsMapFd).mov(2, FP).addImm(2, COUNT_KEY).mov(3, FP).addImm(3, COUNT_VALUE);
  a.movImm(4, BPF_NOEXIST).call("map_update_elem");
  lookup().jumpIf(0, "==", 0, "match");
  a.label("count");
  a.load(width(f.family), 3, SK, f.family.offset).jumpIf(3, "==", AF_INET6, "v6count");
  a.load(4, 1, 0, HeldCount.v4).addImm(1, 1).store(4, 0, HeldCount.v4, 1).jump("match");
  a.label("v6count").load(4, 1, 0, HeldCount.v6).addImm(1, 1).store(4, 0, HeldCount.v6, 1);
  a.label("match");
}
