/**
 * The bpf(2) system call: maps, programs, links and iterators. Each wrapper fills a `union
 * bpf_attr` (include/uapi/linux/bpf.h) in a reused buffer, takes Buffers for the memory the
 * kernel reads or writes (their addresses go into the attribute), and returns the new descriptor,
 * owned by the caller, or throws SysError.
 */
import { readSync } from "node:fs";
import { Errno, SysError } from "./errors.js";
import koffi from "./koffi.cjs";
import { errno, native } from "./libc.js";

const SYS_BPF: Partial<Record<NodeJS.Architecture, number>> = { x64: 321, arm64: 280 };

const BPF_MAP_CREATE = 0;
const BPF_MAP_LOOKUP_ELEM = 1;
const BPF_MAP_UPDATE_ELEM = 2;
const BPF_MAP_GET_NEXT_KEY = 4;
const BPF_PROG_LOAD = 5;
const BPF_OBJ_GET_INFO_BY_FD = 15;
const BPF_BTF_GET_FD_BY_ID = 19;
const BPF_BTF_GET_NEXT_ID = 23;
const BPF_LINK_CREATE = 28;
const BPF_ITER_CREATE = 33;

export const BPF_MAP_TYPE_HASH = 1;
/** map_flags: a hash map's entries are allocated as they are added, not all at its creation. */
export const BPF_F_NO_PREALLOC = 1;
/** A map update's flags: only a key not there yet. */
export const BPF_NOEXIST = 1;
export const BPF_PROG_TYPE_TRACING = 26;
export const BPF_TRACE_ITER = 28;

/** sizeof(union bpf_attr) in the headers this was written against; a newer kernel takes it. */
const ATTR_SIZE = 144;
const attr = Buffer.alloc(ATTR_SIZE);

function bpf(cmd: number, detail: string): number {
  const nr = SYS_BPF[process.arch];
  if (nr === undefined)
    throw new SysError("bpf", Errno.ENOSYS, `${detail}: no syscall number for ${process.arch}`);
  for (;;) {
    const result = Number(native.bpf(nr, cmd, attr, ATTR_SIZE));
    if (result >= 0) return result;
    const e = errno();
    if (e !== Errno.EINTR && e !== Errno.EAGAIN) throw new SysError("bpf", e, detail);
  }
}

function clearAttr(): void {
  attr.fill(0);
}

/** The address of a Buffer's memory, for a pointer field of the attribute. */
function addressOf(buffer: Buffer): bigint {
  return koffi.address(buffer);
}

/** BPF_MAP_CREATE: a map of `type` with keys and values of the given sizes, named (15 bytes). */
export function bpfMapCreate(
  name: string,
  type: number,
  keySize: number,
  valueSize: number,
  maxEntries: number,
  flags = 0,
): number {
  clearAttr();
  attr.writeUInt32LE(flags, 16);
  attr.write(name.slice(0, 15), 28, "latin1");
  attr.writeUInt32LE(type, 0);
  attr.writeUInt32LE(keySize, 4);
  attr.writeUInt32LE(valueSize, 8);
  attr.writeUInt32LE(maxEntries, 12);
  return bpf(BPF_MAP_CREATE, "BPF_MAP_CREATE");
}

/** BPF_MAP_UPDATE_ELEM: set `key` to `value` (BPF_ANY). */
export function bpfMapUpdate(mapFd: number, key: Buffer, value: Buffer): void {
  clearAttr();
  attr.writeUInt32LE(mapFd, 0);
  attr.writeBigUInt64LE(addressOf(key), 8);
  attr.writeBigUInt64LE(addressOf(value), 16);
  bpf(BPF_MAP_UPDATE_ELEM, "BPF_MAP_UPDATE_ELEM");
}

/** BPF_MAP_LOOKUP_ELEM: `key`'s value into `value`; false when the map has no such key. */
export function bpfMapLookup(mapFd: number, key: Buffer, value: Buffer): boolean {
  clearAttr();
  attr.writeUInt32LE(mapFd, 0);
  attr.writeBigUInt64LE(addressOf(key), 8);
  attr.writeBigUInt64LE(addressOf(value), 16);
  return keyFound(() => bpf(BPF_MAP_LOOKUP_ELEM, "BPF_MAP_LOOKUP_ELEM"));
}

/**
 * BPF_MAP_GET_NEXT_KEY: the key after `key` (the first one when `key` is undefined) into `next`;
 * false after the last.
 */
export function bpfMapNextKey(mapFd: number, key: Buffer | undefined, next: Buffer): boolean {
  clearAttr();
  attr.writeUInt32LE(mapFd, 0);
  if (key) attr.writeBigUInt64LE(addressOf(key), 8);
  attr.writeBigUInt64LE(addressOf(next), 16);
  return keyFound(() => bpf(BPF_MAP_GET_NEXT_KEY, "BPF_MAP_GET_NEXT_KEY"));
}

/** Whether `call` succeeded: false where it failed with ENOENT, which it answers for no such key. */
function keyFound(call: () => number): boolean {
  try {
    call();
    return true;
  } catch (err) {
    if (err instanceof SysError && err.errno === Errno.ENOENT) return false;
    throw err;
  }
}

export interface ProgLoad {
  readonly type: number;
  readonly expectedAttachType: number;
  readonly attachBtfId: number;
  /** The instructions, 8 bytes each. */
  readonly insns: Buffer;
  /** NUL-terminated. */
  readonly license: Buffer;
  /** At most 15 bytes. */
  readonly name: string;
  /** Where the verifier writes its log (log level 1), or none. */
  readonly log?: Buffer;
}

/** BPF_PROG_LOAD: the program's descriptor. A refusal throws SysError; its log is in `log`. */
export function bpfProgLoad(prog: ProgLoad): number {
  clearAttr();
  attr.writeUInt32LE(prog.type, 0);
  attr.writeUInt32LE(prog.insns.length / 8, 4);
  attr.writeBigUInt64LE(addressOf(prog.insns), 8);
  attr.writeBigUInt64LE(addressOf(prog.license), 16);
  if (prog.log) {
    prog.log.fill(0);
    attr.writeUInt32LE(1, 24);
    attr.writeUInt32LE(prog.log.length, 28);
    attr.writeBigUInt64LE(addressOf(prog.log), 32);
  }
  attr.write(prog.name.slice(0, 15), 48, "latin1");
  attr.writeUInt32LE(prog.expectedAttachType, 68);
  attr.writeUInt32LE(prog.attachBtfId, 108);
  return bpf(BPF_PROG_LOAD, "BPF_PROG_LOAD");
}

/** BPF_LINK_CREATE for an iterator program with no parameters (every object of its target). */
export function bpfIterLinkCreate(progFd: number): number {
  clearAttr();
  attr.writeUInt32LE(progFd, 0);
  attr.writeUInt32LE(BPF_TRACE_ITER, 8);
  return bpf(BPF_LINK_CREATE, "BPF_LINK_CREATE");
}

/** BPF_ITER_CREATE: a new pass of the iterator behind `linkFd`, read with bpfIterRead. */
export function bpfIterCreate(linkFd: number): number {
  clearAttr();
  attr.writeUInt32LE(linkFd, 0);
  return bpf(BPF_ITER_CREATE, "BPF_ITER_CREATE");
}

/**
 * BPF_BTF_GET_NEXT_ID: the id of the first BTF object the kernel holds after `startId` (0: the
 * first of all), or undefined after the last (ENOENT). Needs CAP_SYS_ADMIN (EPERM without).
 */
export function bpfBtfNextId(startId: number): number | undefined {
  clearAttr();
  attr.writeUInt32LE(startId, 0);
  if (!keyFound(() => bpf(BPF_BTF_GET_NEXT_ID, "BPF_BTF_GET_NEXT_ID"))) return undefined;
  return attr.readUInt32LE(4);
}

/** BPF_BTF_GET_FD_BY_ID: a descriptor of BTF object `id`, owned by the caller (who closes it). */
export function bpfBtfFdById(id: number): number {
  clearAttr();
  attr.writeUInt32LE(id, 0);
  return bpf(BPF_BTF_GET_FD_BY_ID, `BPF_BTF_GET_FD_BY_ID ${id}`);
}

/** What BPF_OBJ_GET_INFO_BY_FD tells of a BTF object (struct bpf_btf_info). */
export interface BtfInfo {
  readonly id: number;
  /** Bytes of the object's BTF data, whatever the buffer given could take. */
  readonly size: number;
  /** Whether the kernel made it (vmlinux, a module), not a program's loader. */
  readonly kernel: boolean;
  /** "vmlinux", a module's name, or "" for one a loader gave. */
  readonly name: string;
}

// struct bpf_btf_info { __aligned_u64 btf; __u32 btf_size; __u32 id; __aligned_u64 name;
//                       __u32 name_len; __u32 kernel_btf; }
const BTF_INFO_SIZE = 32;
const btfInfo = Buffer.alloc(BTF_INFO_SIZE);
/** Room for any name: a module's is at most MODULE_NAME_LEN (56) bytes with its NUL. */
const btfName = Buffer.alloc(64);

/**
 * BPF_OBJ_GET_INFO_BY_FD on a BTF object's descriptor: its info, and its data copied into `data`
 * (as much as fits: the kernel copies min(size, data.length) bytes in one copy_to_user).
 */
export function bpfBtfInfo(btfFd: number, data?: Buffer): BtfInfo {
  btfInfo.fill(0);
  btfName.fill(0);
  if (data && data.length > 0) {
    btfInfo.writeBigUInt64LE(addressOf(data), 0);
    btfInfo.writeUInt32LE(data.length, 8);
  }
  btfInfo.writeBigUInt64LE(addressOf(btfName), 16);
  btfInfo.writeUInt32LE(btfName.length, 24);
  clearAttr();
  attr.writeUInt32LE(btfFd, 0);
  attr.writeUInt32LE(BTF_INFO_SIZE, 4);
  attr.writeBigUInt64LE(addressOf(btfInfo), 8);
  bpf(BPF_OBJ_GET_INFO_BY_FD, "BPF_OBJ_GET_INFO_BY_FD");
  const nameLength = Math.min(btfInfo.readUInt32LE(24), btfName.length - 1);
  return {
    id: btfInfo.readUInt32LE(12),
    size: btfInfo.readUInt32LE(8),
    kernel: btfInfo.readUInt32LE(28) !== 0,
    name: btfName.toString("latin1", 0, nameLength),
  };
}

/** read(2) of an iterator into `buffer` from `offset`: the bytes read, 0 at the end of the pass. */
export function bpfIterRead(iterFd: number, buffer: Buffer, offset: number): number {
  for (;;) {
    try {
      return readSync(iterFd, buffer, offset, buffer.length - offset, null);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === "EINTR" || code === "EAGAIN") continue;
      const number = -((err as NodeJS.ErrnoException).errno ?? -Errno.EIO);
      throw new SysError("read", number, "bpf iterator");
    }
  }
}
