import type { SkMemInfo } from "./socket.js";

/**
 * Decode the u32 array of SKMEMINFO (INET_DIAG_SKMEMINFO, UNIX_DIAG_MEMINFO), indexed by
 * SK_MEMINFO_RMEM_ALLOC .. SK_MEMINFO_DROPS. Kernels before 4.x send 8 entries (no drops).
 * The caller has checked that `length` >= 32.
 */
export function decodeSkMemInfo(buf: Buffer, o: number, length: number): SkMemInfo {
  const m: SkMemInfo = {
    rmemAlloc: buf.readUInt32LE(o),
    rcvbuf: buf.readUInt32LE(o + 4),
    wmemAlloc: buf.readUInt32LE(o + 8),
    sndbuf: buf.readUInt32LE(o + 12),
    fwdAlloc: buf.readUInt32LE(o + 16),
    wmemQueued: buf.readUInt32LE(o + 20),
    optmem: buf.readUInt32LE(o + 24),
    backlog: buf.readUInt32LE(o + 28),
  };
  if (length >= 36) m.drops = buf.readUInt32LE(o + 32);
  return m;
}
