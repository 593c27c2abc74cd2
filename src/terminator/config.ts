/**
 * A terminator's configuration and the options of one call, and their check: an object of known
 * keys, a namespace selection, flags that are booleans.
 */

import type { ConntrackEntry } from "../conntrack/index.js";
import type { InetSocket } from "../diag/socket.js";
import { checkNamespaceSelection, type NamespaceSelection, SELECTION_KEYS } from "../netns/index.js";
import { checkBoolean, checkOptions, describe, type KnownKeys, QueryError } from "../options/index.js";
import type { AbortSignalLike } from "../sys/errors.js";
import { ONE_PASS_MODES, type OnePassMode } from "./one-pass.js";
import type { BackendProtocol, NamespaceResult } from "./report.js";

/** Where log lines go. Without one, BackendTerminator logs nothing (everything is in its report). */
export interface Logger {
  info(message: string, fields?: Record<string, unknown>): void;
  warn(message: string, fields?: Record<string, unknown>): void;
}

/**
 * BackendTerminator's configuration; every field is optional. Where it runs is a
 * NamespaceSelection whose `netns` defaults to "all": the caller's own namespace, then every one
 * pinned in `netnsDirs` (default: each of DEFAULT_NETNS_DIRS that exists), then every one a process
 * is in (unless `discover` is false). A handle, name or path visits that namespace alone; a handle
 * of the caller's own namespace (currentNetns()), only the caller's own.
 */
export interface TerminatorConfig extends NamespaceSelection {
  /** Protocol when terminate() is not told one. Default "udp". */
  protocol?: BackendProtocol;
  /**
   * Veto per socket: answer false to keep it, true to destroy it; any other answer is handled as a
   * throw (PredicateError in that namespace, the socket kept). Cilium checks its socket-LB map by
   * cookie here.
   */
  predicate?: (socket: InetSocket) => boolean;
  /**
   * Veto per conntrack entry, as `predicate` per socket (the conntrack step's entries: UDP, DNATed
   * to a backend). Whose flow an entry was is its original source.
   */
  conntrackPredicate?: (entry: ConntrackEntry) => boolean;
  /** Count and report, destroy nothing. */
  dryRun?: boolean;
  logger?: Logger;
  /**
   * Called after each namespace, e.g. for a progress line ("namespace 37 of 412"): its place in the
   * walk, and how many namespaces the walk found when it started (some may vanish before their turn).
   */
  onNamespace?: (result: NamespaceResult, index: number, total: number | undefined) => void;
  /**
   * Also delete the UDP conntrack entries whose reply source is a backend (flows DNATed to it), in
   * every namespace visited. Default true; it concerns backends whose protocol covers UDP.
   */
  conntrack?: boolean;
  /**
   * Find the sockets connected to the backends in one pass over every task's open files (a BPF
   * iterator) and enter only the namespaces that need it (see docs/DESIGN.md): "auto" where it can
   * run (privileges, the initial PID namespace, BTF, the kernel) and pays (UDP backends, every
   * namespace, a UDP table the namespaces share); "on" wherever it can run — else
   * OnePassUnavailableError, naming why; "off" walks every namespace with sock_diag. Default "auto".
   */
  onePass?: OnePassMode;
}

/** Options of one terminate() or terminateMany() call. */
export interface TerminateOptions {
  /**
   * Checked before each namespace and each destroy write: once aborted, nothing more is sent and
   * AbortError is thrown with the report so far (the namespace in progress included).
   */
  signal?: AbortSignalLike;
}

export const CONFIG_KEYS: KnownKeys<TerminatorConfig> = {
  ...SELECTION_KEYS,
  protocol: true,
  predicate: true,
  conntrackPredicate: true,
  dryRun: true,
  logger: true,
  onNamespace: true,
  conntrack: true,
  onePass: true,
};

export const TERMINATE_KEYS: KnownKeys<TerminateOptions> = { signal: true };

/**
 * Check a TerminatorConfig as a caller gave it (BackendTerminator's constructor, and
 * sockdiag/promises' before sending it to the worker): an object of known keys, its namespace
 * selection, flags that are booleans. Throws QueryError naming the field.
 */
export function checkTerminatorConfig(config: unknown): void {
  checkOptions(config, CONFIG_KEYS, "config");
  const c = config as TerminatorConfig;
  checkNamespaceSelection(c);
  for (const flag of ["dryRun", "conntrack"] as const) checkBoolean(c[flag], `config.${flag}`);
  if (c.onePass !== undefined && !ONE_PASS_MODES.includes(c.onePass))
    throw new QueryError("config.onePass", describe(c.onePass), 'expected "auto", "on" or "off"');
}
