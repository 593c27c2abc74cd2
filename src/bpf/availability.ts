/**
 * Whether the one pass can run here, and if not, why — as a typed reason, so a caller falls back
 * to walking namespaces with sock_diag and says why: privileges (CAP_BPF with CAP_PERFMON, or
 * CAP_SYS_ADMIN), the PID namespace (a task_file iterator sees only the tasks of the caller's),
 * the kernel's BTF, and the kernel itself (a probe load and attach of the very program).
 */
import { readlinkSync } from "node:fs";
import { CAP_BPF, CAP_PERFMON, CAP_SYS_ADMIN, hasCapability } from "../sys/capabilities.js";
import { Errno, SysError } from "../sys/errors.js";
import { bpfIterLinkCreate, close, IPPROTO_UDP } from "../sys/index.js";
import { BtfError, VerifierError } from "./errors.js";
import { kernelLayout, loadFinder } from "./find.js";

/** The initial PID namespace's inode number (PROC_PID_INIT_INO, include/linux/proc_ns.h). */
const INITIAL_PID_NAMESPACE = "pid:[4026531836]";

export type OnePassUnavailableReason =
  /** Neither CAP_SYS_ADMIN nor both CAP_BPF and CAP_PERFMON, or the kernel said EPERM. */
  | "privileges"
  /** Not in the initial PID namespace: the pass would miss the tasks outside it. */
  | "pid-namespace"
  /** No readable BTF: neither the kernel's object through bpf() nor /sys/kernel/btf/vmlinux. */
  | "no-btf"
  /** The kernel lacks a type, field, helper, attach type or the bpf() call itself. */
  | "kernel"
  /** The verifier refused the program. */
  | "verifier";

export type OnePassAvailability =
  | { readonly available: true }
  | {
      readonly available: false;
      readonly reason: OnePassUnavailableReason;
      readonly message: string;
      readonly error?: BtfError | VerifierError | SysError;
    };

/** Whether findConnectedSockets can run in this process now; nothing stays loaded after. */
export function onePassAvailability(): OnePassAvailability {
  if (!hasCapability(CAP_SYS_ADMIN) && !(hasCapability(CAP_BPF) && hasCapability(CAP_PERFMON))) {
    return unavailable("privileges", "needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN");
  }
  const pidNamespace = readLink("/proc/self/ns/pid");
  if (pidNamespace !== INITIAL_PID_NAMESPACE) {
    return unavailable(
      "pid-namespace",
      `not in the initial PID namespace (in ${pidNamespace ?? "one /proc/self/ns/pid does not name"}): a task_file iterator sees only its tasks`,
    );
  }
  try {
    kernelLayout();
    const progFd = loadFinder([], [IPPROTO_UDP]);
    try {
      close(bpfIterLinkCreate(progFd));
    } finally {
      close(progFd);
    }
    return { available: true };
  } catch (err) {
    const because = unavailableBecause(err);
    if (because === undefined) throw err;
    return because;
  }
}

/** The reason a failed probe gives, or undefined where `err` is none of the kinds a probe expects. */
export function unavailableBecause(err: unknown): OnePassAvailability | undefined {
  if (err instanceof VerifierError) return unavailable("verifier", err.message, err);
  if (err instanceof BtfError)
    return unavailable(/cannot read/.test(err.message) ? "no-btf" : "kernel", err.message, err);
  if (err instanceof SysError) {
    const denied = err.errno === Errno.EPERM || err.errno === Errno.EACCES;
    return unavailable(denied ? "privileges" : "kernel", err.message, err);
  }
  return undefined;
}

function unavailable(
  reason: OnePassUnavailableReason,
  message: string,
  error?: BtfError | VerifierError | SysError,
): OnePassAvailability {
  return { available: false, reason, message, ...(error ? { error } : {}) };
}

function readLink(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
