/**
 * Running an iterator program: load it (a refusal read again with the verifier's log, as a typed
 * VerifierError), attach it as an iterator link, make one pass and read it. Every descriptor is
 * closed before the call returns or throws, so nothing stays loaded.
 */

import { Errno, errnoName, SysError } from "../sys/errors.js";
import {
  BPF_PROG_TYPE_TRACING,
  BPF_TRACE_ITER,
  bpfIterCreate,
  bpfIterLinkCreate,
  bpfIterRead,
  bpfProgLoad,
  close,
  type ProgLoad,
} from "../sys/index.js";
import { VerifierError } from "./errors.js";

const LICENSE = Buffer.from("GPL\0", "latin1");
/** Refusals that are no verdict of the verifier: the caller's privileges, or its or the kernel's resources. */
const NOT_THE_VERIFIER: ReadonlySet<number> = new Set([
  Errno.EPERM,
  Errno.EMFILE,
  Errno.ENFILE,
  Errno.ENOMEM,
]);
const LOG_SIZE = 1 << 20;
const READ_SIZE = 1 << 16;

export interface IteratorProgram {
  readonly name: string;
  readonly insns: Buffer;
  readonly attachBtfId: number;
}

/**
 * Loads `program` as a BPF_TRACE_ITER tracing program: its descriptor, owned by the caller. A
 * refusal is a VerifierError, but for EPERM, EMFILE, ENFILE and ENOMEM: a SysError.
 */
export function loadIteratorProgram(program: IteratorProgram): number {
  const load: ProgLoad = {
    type: BPF_PROG_TYPE_TRACING,
    expectedAttachType: BPF_TRACE_ITER,
    attachBtfId: program.attachBtfId,
    insns: program.insns,
    license: LICENSE,
    name: program.name,
  };
  try {
    return bpfProgLoad(load);
  } catch (err) {
    if (!(err instanceof SysError) || NOT_THE_VERIFIER.has(err.errno)) throw err;
    // Again with the verifier's log: a second load only on failure, as libbpf does.
    const log = Buffer.alloc(LOG_SIZE);
    try {
      const fd = bpfProgLoad({ ...load, log });
      close(fd);
    } catch (again) {
      if (!(again instanceof SysError)) throw again;
      const end = log.indexOf(0);
      const text = log.toString("latin1", 0, end < 0 ? log.length : end);
      throw new VerifierError(program.name, again.errno, errnoName(again.errno), text);
    }
    throw err;
  }
}

/**
 * One pass of the iterator program `progFd`: `onBytes` gets each read's bytes (always in the same
 * buffer, which starts its ArrayBuffer), and answers how many it took (whole records); the rest is
 * kept, ahead of the next read's. The link and iterator are
 * closed before it returns; the program's descriptor stays the caller's.
 */
export function readIterator(progFd: number, onBytes: (buffer: Buffer, length: number) => number): void {
  const linkFd = bpfIterLinkCreate(progFd);
  try {
    const iterFd = bpfIterCreate(linkFd);
    try {
      // Its own memory, from offset 0: records of whole words can be read as typed arrays.
      const buffer = Buffer.from(new ArrayBuffer(READ_SIZE));
      let held = 0;
      for (;;) {
        const n = bpfIterRead(iterFd, buffer, held);
        if (n === 0) break;
        const length = held + n;
        const taken = onBytes(buffer, length);
        held = length - taken;
        buffer.copy(buffer, 0, taken, length);
      }
    } finally {
      close(iterFd);
    }
  } finally {
    close(linkFd);
  }
}
