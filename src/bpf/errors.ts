/** The errors of the BPF layer. */
import { sockdiagError } from "../sys/errors.js";

/** BtfError: the kernel's BTF is missing, malformed, or lacks a type or member the loader needs. */
export class BtfError extends sockdiagError("BtfError", "ERR_SOCKDIAG_BTF") {}

/**
 * VerifierError: the kernel refused to load a BPF program. `log` is the verifier's own account
 * (log level 1), `errno` the refusal's number (EACCES, EINVAL, EPERM, ...).
 */
export class VerifierError extends sockdiagError("VerifierError", "ERR_SOCKDIAG_VERIFIER") {
  declare readonly log: string;
  declare readonly errno: number;

  constructor(program: string, errno: number, errnoName: string, log: string) {
    const last = log.trim().split("\n").slice(-3).join(" | ");
    super(`the kernel refused BPF program ${program}: ${errnoName}${last ? `: ${last}` : ""}`, {
      log,
      errno,
    });
  }
}

/** AsmError: a BPF program assembled against its rules (an unknown label, a jump out of range). */
export class AsmError extends sockdiagError("AsmError", "ERR_SOCKDIAG_BPF_ASM") {}
