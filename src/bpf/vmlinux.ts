/**
 * The running kernel's BTF data, whole. The cheap way is the kernel's own vmlinux BTF object,
 * found through bpf() (BPF_BTF_GET_NEXT_ID, BPF_BTF_GET_FD_BY_ID: CAP_SYS_ADMIN) and copied out by
 * BPF_OBJ_GET_INFO_BY_FD in one copy_to_user. /sys/kernel/btf/vmlinux holds the same bytes, but
 * kernfs hands a bin attribute at most a page a read (kernfs_file_read_iter): ~1,340 reads of
 * 4 KiB for 5.4 MB. That file is the way where bpf() is refused (CAP_BPF without CAP_SYS_ADMIN).
 */
import { readFileSync } from "node:fs";
import { SysError } from "../sys/errors.js";
import { bpfBtfFdById, bpfBtfInfo, bpfBtfNextId, close } from "../sys/index.js";
import { BtfError } from "./errors.js";

export const VMLINUX_BTF = "/sys/kernel/btf/vmlinux";

/** The kernel's BTF data and which way it came: its object through bpf(), or the sysfs file. */
export interface VmlinuxBtf {
  readonly data: Buffer;
  readonly source: "bpf" | "file";
  /** Why the bpf() way was not taken, when it was not. */
  readonly refused?: SysError | BtfError;
}

/**
 * vmlinuxBtf reads the running kernel's BTF: through `fromKernel` (the bpf() way), or where that
 * fails with a SysError or BtfError, from the file at `path`. BtfError ("cannot read") when
 * neither gives it; anything else `fromKernel` throws is thrown as is.
 */
export function vmlinuxBtf(fromKernel: () => Buffer = kernelVmlinuxBtf, path = VMLINUX_BTF): VmlinuxBtf {
  let refused: SysError | BtfError;
  try {
    return { data: fromKernel(), source: "bpf" };
  } catch (err) {
    if (!(err instanceof SysError || err instanceof BtfError)) throw err;
    refused = err;
  }
  try {
    return { data: readBtfFile(path), source: "file", refused };
  } catch (err) {
    const unread = err as BtfError;
    throw new BtfError(`${unread.message} (nor through bpf(): ${refused.message})`, undefined, unread.cause);
  }
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
