/**
 * The running kernel's BTF data, whole. The cheap way (6.16 on) maps /sys/kernel/btf/vmlinux: the
 * kernel maps its own BTF pages read-only into the process (remap_pfn_range, at mmap), with neither
 * a copy nor a page fault, for anyone who may read the file. Where the file cannot be mapped
 * (ENODEV before 6.16), the kernel's vmlinux BTF object is copied through bpf() (BPF_BTF_GET_NEXT_ID,
 * BPF_BTF_GET_FD_BY_ID: CAP_SYS_ADMIN) by BPF_OBJ_GET_INFO_BY_FD in one copy_to_user (~9 ms for 5.4
 * MB, most of it faulting in the fresh buffer's pages). The file read holds the same bytes, but
 * kernfs hands a bin attribute at most a page a read (kernfs_file_read_iter): ~1,340 reads of 4 KiB
 * for 5.4 MB. That is the way where bpf() is refused (CAP_BPF without CAP_SYS_ADMIN).
 */
import { readFileSync } from "node:fs";
import { SysError } from "../sys/errors.js";
import { bpfBtfFdById, bpfBtfInfo, bpfBtfNextId, close, mapFileReadOnly } from "../sys/index.js";
import { BtfError } from "./errors.js";

export const VMLINUX_BTF = "/sys/kernel/btf/vmlinux";

/** The kernel's BTF data and which way it came: the sysfs file mapped, the object through bpf(), or the file read. */
export interface VmlinuxBtf {
  /** Over a mapping when mapped: read-only, and a write kills the process. */
  readonly data: Buffer;
  readonly source: "map" | "bpf" | "file";
  /** Why the file was not mapped, when it was not. */
  readonly unmapped?: SysError;
  /** Why the bpf() way was not taken, when the file was read. */
  readonly refused?: SysError | BtfError;
}

/**
 * vmlinuxBtf reads the running kernel's BTF: the file at `path` mapped by `map`; where that fails
 * with a SysError, through `fromKernel` (the bpf() way); where that fails with a SysError or
 * BtfError, the file read. BtfError ("cannot read") when none gives it; anything else `map` or
 * `fromKernel` throws is thrown as is.
 */
export function vmlinuxBtf(
  fromKernel: () => Buffer = kernelVmlinuxBtf,
  path = VMLINUX_BTF,
  map: (path: string) => Buffer = mapBtfFile,
): VmlinuxBtf {
  let unmapped: SysError;
  try {
    return { data: map(path), source: "map" };
  } catch (err) {
    if (!(err instanceof SysError)) throw err;
    unmapped = err;
  }
  let refused: SysError | BtfError;
  try {
    return { data: fromKernel(), source: "bpf", unmapped };
  } catch (err) {
    if (!(err instanceof SysError || err instanceof BtfError)) throw err;
    refused = err;
  }
  try {
    return { data: readBtfFile(path), source: "file", unmapped, refused };
  } catch (err) {
    const unread = err as BtfError;
    throw new BtfError(
      `${unread.message} (nor mapped: ${unmapped.message}; nor through bpf(): ${refused.message})`,
      undefined,
      unread.cause,
    );
  }
}

/** Each file mapBtfFile mapped, by path: a mapping is never unmapped, so a process maps a file once. */
const mapped = new Map<string, Buffer>();

/** The BTF file at `path` mapped read-only (mapFileReadOnly), once a process; SysError where it cannot be. */
export function mapBtfFile(path: string): Buffer {
  let data = mapped.get(path);
  if (data === undefined) {
    data = mapFileReadOnly(path);
    mapped.set(path, data);
  }
  return data;
}

/** The BTF data of the file at `path`; BtfError ("cannot read") when it cannot be read. */
export function readBtfFile(path: string): Buffer {
  try {
    return readFileSync(path);
  } catch (err) {
    throw new BtfError(`cannot read ${path}: ${(err as NodeJS.ErrnoException).code ?? err}`, undefined, err);
  }
}

/**
 * kernelVmlinuxBtf copies the kernel's vmlinux BTF object (kernel_btf, named "vmlinux": the first
 * the kernel makes, id 1 in practice) through bpf(). SysError where bpf() refuses (EPERM without
 * CAP_SYS_ADMIN), BtfError where the kernel holds none. Each descriptor is closed before it returns.
 */
export function kernelVmlinuxBtf(): Buffer {
  for (let id = bpfBtfNextId(0); id !== undefined; id = bpfBtfNextId(id)) {
    let fd: number;
    try {
      fd = bpfBtfFdById(id);
    } catch (err) {
      // freed between the two calls (a program's BTF): not the kernel's
      if (err instanceof SysError && err.code === "ENOENT") continue;
      throw err;
    }
    try {
      const info = bpfBtfInfo(fd);
      if (!info.kernel || info.name !== "vmlinux") continue;
      const data = Buffer.allocUnsafe(info.size);
      const copied = bpfBtfInfo(fd, data);
      if (copied.size !== data.length) {
        throw new BtfError(`the vmlinux BTF object changed size (${info.size} -> ${copied.size} bytes)`);
      }
      return data;
    } finally {
      close(fd);
    }
  }
  throw new BtfError("the kernel holds no vmlinux BTF object");
}
