/**
 * The calling process's effective capabilities (CapEff in /proc/self/status). What the kernel
 * allows depends on them, not on the user id: root in a container commonly lacks CAP_NET_ADMIN.
 */
import { readFileSync } from "node:fs";

// include/uapi/linux/capability.h
export const CAP_NET_ADMIN = 12;
export const CAP_SYS_PTRACE = 19;
export const CAP_SYS_ADMIN = 21;
export const CAP_PERFMON = 38;
export const CAP_BPF = 39;

/** The effective capability mask, or undefined when /proc/self/status cannot be read. */
export function effectiveCapabilities(): bigint | undefined {
  try {
    const line = readFileSync("/proc/self/status", "utf8").match(/^CapEff:\s*([0-9a-f]+)$/m);
    return line ? BigInt(`0x${line[1]}`) : undefined;
  } catch {
    return undefined;
  }
}

/** Whether capability `bit` is effective now (false when that cannot be read). */
export function hasCapability(bit: number): boolean {
  const caps = effectiveCapabilities();
  return caps !== undefined && ((caps >> BigInt(bit)) & 1n) === 1n;
}
