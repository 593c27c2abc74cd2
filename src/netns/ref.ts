/**
 * NetnsRef: a namespace named as plain data — what results carry, what survives structuredClone
 * and postMessage — and the one way back from it to a handle. A ref holds the namespace's identity
 * (st_dev, st_ino of its nsfs file) and the ways to reach it (a pin or path, a process); reopening
 * checks the identity, so a pin replaced or a pid reused by a process elsewhere is never taken for
 * the namespace it named.
 */
import type { SocketNetns } from "../diag/socket.js";
import { threadNetns } from "./enter.js";
import { NetnsError, NetnsNotFoundError } from "./errors.js";
import { NetNS } from "./handle.js";
import { fromName } from "./pinned.js";

/**
 * A network namespace, by identity and by the ways to open it again. The shape is declared with
 * the socket model (sockets carry it as `netns`); this module owns what is done with it.
 */
export type NetnsRef = SocketNetns;

/**
 * Open the namespace `ref` names again: through its path, else its process, whichever still leads
 * to the same namespace. The caller owns the handle. Throws NetnsNotFoundError when neither does
 * any more (the namespace, or the way to it, is gone), NetnsError when the ref names no way at all.
 */
export function reopenNetns(ref: NetnsRef): NetNS {
  threadNetns.assertUsable();
  const ways: [string, number | undefined][] = [];
  if (ref.path !== undefined) ways.push([ref.path, undefined]);
  if (ref.pid !== undefined) ways.push([`/proc/${ref.pid}/ns/net`, ref.pid]);
  if (ways.length === 0)
    throw new NetnsError(ref.label, "cannot be opened again: it was found without a pin or a process");
  let last: NetnsError | undefined;
  for (const [path, pid] of ways) {
    try {
      const ns = NetNS.open(path, ref.name, pid);
      if (ns.dev === ref.dev && ns.ino === ref.ino) return ns;
      ns.close();
    } catch (err) {
      if (!(err instanceof NetnsError)) throw err;
      last = err;
    }
  }
  throw new NetnsNotFoundError(
    ref.label,
    `is gone: no pin or process leads to net:[${ref.ino}] any more`,
    last?.cause,
  );
}

/**
 * Open the namespace a label names: "pid:N" (a process's), a path (anything with "/"), or a pinned
 * name in the default pin directory. The caller owns the handle. Throws InvalidNetnsNameError,
 * NetnsNotFoundError, NotANetnsError, NetnsError ("net:[ino]" cannot be opened from its label).
 */
export function fromLabel(label: string): NetNS {
  threadNetns.assertUsable();
  const pid = /^pid:(\d+)$/.exec(label)?.[1];
  if (pid) return NetNS.open(`/proc/${pid}/ns/net`, undefined, Number(pid));
  if (label.startsWith("net:["))
    throw new NetnsError(label, "a namespace found without a name or process cannot be opened by its label");
  if (label.includes("/")) return NetNS.open(label);
  return fromName(label);
}

/** The label a walk gives a namespace: its first pinned name, else its first process, else its inode. */
export function walkLabel(name: string | undefined, pids: readonly number[], ino: number): string {
  return name ?? (pids.length > 0 ? `pid:${pids[0]}` : `net:[${ino}]`);
}
