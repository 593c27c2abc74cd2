/**
 * The kernel layouts the socket-finding program reads, taken from the running kernel's BTF by name
 * (never hard-coded: they differ between kernels and builds). Each field comes with its width, so
 * the program loads exactly the member the verifier will check it against.
 */
import { type Btf, Kind } from "./btf.js";
import { BtfError } from "./errors.js";

/** A field the program reads: its offset in its struct and its width in bytes. */
export interface Field {
  readonly offset: number;
  readonly size: number;
}

/** Each field the program reads: struct, member path, and the widths the program can load. */
export const FIELDS = {
  // struct bpf_iter__task_file: the program's context
  ctxMeta: ["bpf_iter__task_file", "meta", [8]],
  ctxTask: ["bpf_iter__task_file", "task", [8]],
  ctxFd: ["bpf_iter__task_file", "fd", [4]],
  ctxFile: ["bpf_iter__task_file", "file", [8]],
  metaSeq: ["bpf_iter_meta", "seq", [8]],
  taskTgid: ["task_struct", "tgid", [4]],
  fileInode: ["file", "f_inode", [8]],
  inodeIno: ["inode", "i_ino", [8]],
  socketSk: ["socket", "sk", [8]],
  // SOCK_DGRAM, SOCK_STREAM, ...: in the line socketSk is read from
  socketType: ["socket", "type", [2]],
  // skc_cookie: 0 until something (sock_diag, SO_COOKIE, a BPF helper) asked for it
  cookie: ["sock", "__sk_common.skc_cookie.counter", [8]],
  family: ["sock", "__sk_common.skc_family", [2]],
  state: ["sock", "__sk_common.skc_state", [1]],
  boundDevIf: ["sock", "__sk_common.skc_bound_dev_if", [4]],
  daddr: ["sock", "__sk_common.skc_daddr", [4]],
  rcvSaddr: ["sock", "__sk_common.skc_rcv_saddr", [4]],
  dport: ["sock", "__sk_common.skc_dport", [2]],
  num: ["sock", "__sk_common.skc_num", [2]],
  v6Daddr: ["sock", "__sk_common.skc_v6_daddr", [16]],
  v6RcvSaddr: ["sock", "__sk_common.skc_v6_rcv_saddr", [16]],
  net: ["sock", "__sk_common.skc_net.net", [8]],
  protocol: ["sock", "sk_protocol", [2]],
  type: ["sock", "sk_type", [2]],
  // the namespace's inode number, as /proc/PID/ns/net names it
  netInum: ["net", "ns.inum", [4]],
} as const satisfies Record<string, readonly [string, string, readonly number[]]>;

export type FieldName = keyof typeof FIELDS;

export interface TaskFileLayout {
  /** BTF id of bpf_iter_task_file, the iterator target's function: the program's attach_btf_id. */
  readonly attachBtfId: number;
  readonly fields: Readonly<Record<FieldName, Field>>;
}

/** The task_file iterator's context and the socket fields, from `btf`; BtfError names what is missing. */
export function taskFileLayout(btf: Btf): TaskFileLayout {
  const fields = {} as Record<FieldName, Field>;
  for (const [name, [struct, path, sizes]] of Object.entries(FIELDS) as [
    FieldName,
    (typeof FIELDS)[FieldName],
  ][]) {
    const member = btf.member(struct, path);
    if (!(sizes as readonly number[]).includes(member.size)) {
      throw new BtfError(`${struct}.${path} is ${member.size} bytes, not ${sizes.join(" or ")}`);
    }
    fields[name] = { offset: member.offset, size: member.size };
  }
  return { attachBtfId: btf.find(Kind.FUNC, "bpf_iter_task_file"), fields };
}
