/**
 * A file mapped read-only (mmap, PROT_READ, MAP_PRIVATE): its bytes as a Buffer over the mapping,
 * without a copy. A file the kernel backs with its own memory (/sys/kernel/btf/vmlinux from 6.16:
 * remap_pfn_range over the kernel's BTF, all at once) costs neither a copy nor a page fault.
 */
import { closeSync, fstatSync, openSync } from "node:fs";
import { Errno, SysError } from "./errors.js";
import koffi from "./koffi.cjs";
import { errno, native } from "./libc.js";

const PROT_READ = 1;
const MAP_PRIVATE = 2;
const MAP_FAILED = 0xffff_ffff_ffff_ffffn;

/**
 * mapFileReadOnly maps the whole file at `path`; SysError where it cannot be opened (its fs code)
 * or mapped (ENODEV where its file system maps nothing). The mapping is never unmapped: a Buffer
 * over it may be kept anywhere, and a read after munmap would kill the process, so a caller maps a
 * file once. A write into the Buffer kills the process too (the pages are read-only).
 */
export function mapFileReadOnly(path: string): Buffer {
  let fd: number;
  try {
    fd = openSync(path, "r");
  } catch (err) {
    throw new SysError("open", -((err as NodeJS.ErrnoException).errno ?? -Errno.EIO), path);
  }
  try {
    const size = fstatSync(fd).size;
    if (size === 0) throw new SysError("mmap", Errno.EINVAL, `${path}: empty`);
    const address = native.mmap(null, size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (koffi.address(address) === MAP_FAILED) throw new SysError("mmap", errno(), path);
    return Buffer.from(koffi.view(address, size));
  } finally {
    closeSync(fd);
  }
}
