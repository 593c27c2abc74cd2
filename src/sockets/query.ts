/**
 * SocketQuery: what a caller asks for, its translation into the sock_diag dump requests that
 * answer it, and the network namespaces it visits: the caller's own, one named by handle, name or
 * path, or all of them (the caller's first, then every pinned or discovered namespace, each once).
 * Every name is checked here, before anything is sent to the kernel.
 */
import {
  EXTENSION_BITS,
  EXTENSION_NAMES,
  FAMILY_NAMES,
  familyNumber,
  isProtocol,
  PROTOCOL_NAMES,
  unixShow,
} from "../diag/constants.js";
import type { Extension, InetFamily, InetProtocol, Protocol } from "../diag/socket.js";
import { ALL_STATES, stateMask, stateWords } from "../diag/states.js";
import { type FilterInput, FilterResolveError, type PreparedFilter, prepareFilter } from "../filter/index.js";
import { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "../netlink/index.js";
import {
  fromLabel,
  isFatalNetnsError,
  type NamespaceFailure,
  NetNS,
  NetnsError,
  type NetnsRef,
  walkNetns,
} from "../netns/index.js";
import { type SockdiagError, SysError } from "../sys/errors.js";
import { QueryError } from "./errors.js";
import { checkBoolean, checkOptions, describe, type KnownKeys } from "./options.js";

/** Which sockets to list. Every field is optional. */
export interface SocketQuery {
  /** Protocols to list. Default: tcp and udp. */
  protocols?: readonly Protocol[];
  /** Address families for inet protocols. Default: both. */
  families?: readonly InetFamily[];
  /**
   * States, by ss name or group ("established", "listening", "close", "connected", "all", ...), or a
   * ready bit mask (1 << state). Default: all states.
   */
  states?: readonly string[] | number;
  /** States to leave out, as ss's `exclude` word: applied after `states`. */
  exclude?: readonly string[];
  /** Extra information to ask the kernel for. */
  extensions?: readonly Extension[];
  /**
   * ss filter: text (`"dst 10.0.0.5:53"`), argv words, a parsed FilterNode, or an object such as
   * `{ dst: "10.0.0.5", dport: 53 }`. Filters select inet sockets: a query with a filter cannot ask
   * for unix sockets (QueryError).
   */
  filter?: FilterInput;
  /**
   * Send the filter to the kernel as INET_DIAG_REQ_BYTECODE when it can be expressed (default true).
   * The JS predicate always runs, so turning this off changes speed, not results — except for
   * `autobound`, which only the kernel can tell exactly (without the program, a port in the
   * ephemeral range counts as autobound).
   */
  kernelFilter?: boolean;
  /**
   * Leave out the protocols this kernel has no sock_diag handler for (raw, SCTP, ...) instead of
   * throwing UnsupportedProtocolError — for "everything there is" listings. Default false.
   */
  ignoreUnsupported?: boolean;
}

/** The keys of SocketQuery, for checkOptions. */
export const SOCKET_QUERY_KEYS: KnownKeys<SocketQuery> = {
  protocols: true,
  families: true,
  states: true,
  exclude: true,
  extensions: true,
  filter: true,
  kernelFilter: true,
  ignoreUnsupported: true,
};

/** One inet dump to send. */
export interface InetDump {
  protocol: InetProtocol;
  family: number;
  ext: number;
  states: number;
}

/** The requests a query turns into. */
export interface QueryPlan {
  inet: InetDump[];
  /** unix_diag dump, if unix sockets were asked for. */
  unix?: { states: number; show: number };
  /** Whether inet attributes must be decoded (extensions asked for, or read by the filter). */
  attributes: boolean;
  filter: PreparedFilter;
  /** Skip a dump the kernel answers with "no handler" (SocketQuery.ignoreUnsupported). */
  ignoreUnsupported: boolean;
  /** The protocols skipped so, filled in while dumping. */
  unsupported: Set<Protocol>;
}

export { EXTENSION_NAMES };

/** The state mask a list of ss state words stands for; throws QueryError naming an unknown word. */
export function statesFromWords(words: readonly string[], field = "states"): number {
  let mask = 0;
  for (const word of words) {
    const bits = stateMask(word);
    if (bits === undefined) {
      throw new QueryError(field, word, `unknown state; known: ${stateWords().join(", ")}`);
    }
    mask |= bits;
  }
  return mask;
}

function checkedMask(mask: number): number {
  if (!Number.isInteger(mask) || mask < 0 || mask > 0xffffffff) {
    throw new QueryError(
      "states",
      String(mask),
      "a state mask is a 32-bit unsigned integer of (1 << state) bits",
    );
  }
  return mask;
}

/** Check a query and turn it into dump requests. Throws QueryError, FilterSyntaxError; sends nothing. */
export function planQuery(query: SocketQuery): QueryPlan {
  checkBoolean(query.kernelFilter, "kernelFilter");
  checkBoolean(query.ignoreUnsupported, "ignoreUnsupported");
  const protocols = query.protocols ?? ["tcp", "udp"];
  for (const p of protocols) {
    if (!isProtocol(p))
      throw new QueryError("protocols", String(p), `unknown protocol; known: ${PROTOCOL_NAMES.join(", ")}`);
  }
  const families = query.families ?? FAMILY_NAMES;
  for (const f of families) {
    if (!FAMILY_NAMES.includes(f)) throw new QueryError("families", String(f), "expected inet or inet6");
  }
  let states =
    query.states === undefined
      ? ALL_STATES
      : typeof query.states === "number"
        ? checkedMask(query.states)
        : statesFromWords(query.states);
  if (query.exclude) states &= ~statesFromWords(query.exclude, "exclude");
  let ext = 0;
  for (const e of query.extensions ?? []) {
    const bit = Object.hasOwn(EXTENSION_BITS, e) ? EXTENSION_BITS[e] : undefined;
    if (bit === undefined)
      throw new QueryError(
        "extensions",
        String(e),
        `unknown extension; known: ${EXTENSION_NAMES.join(", ")}`,
      );
    ext |= bit;
  }
  const filter = prepareFilter(query.filter, query.kernelFilter ?? true);
  const plan: QueryPlan = {
    inet: [],
    attributes: ext !== 0 || filter.needsAttributes,
    filter,
    ignoreUnsupported: Boolean(query.ignoreUnsupported),
    unsupported: new Set(),
  };
  for (const protocol of new Set(protocols)) {
    if (protocol === "unix") {
      if (filter.tree) {
        throw new QueryError(
          "protocols",
          "unix",
          "a filter selects IP sockets; list unix sockets without one",
        );
      }
      plan.unix = {
        states,
        show: unixShow(Boolean(query.extensions?.includes("skmem"))),
      };
      continue;
    }
    for (const family of new Set(families)) {
      plan.inet.push({ protocol, family: familyNumber(family), ext, states });
    }
  }
  return plan;
}

// ---- the namespaces a query visits ----

export type { NamespaceFailure };

/** A namespace selector: a handle, a pinned name, a path (anything with "/"), or "all". */
export type NetnsSelector = NetNS | string;

/** Options for selecting namespaces with "all". */
export interface NamespaceSourceOptions {
  /** Pin directories searched by "all". Default ["/run/netns"]. */
  netnsDirs?: readonly string[];
}

/**
 * Check `netnsDirs` as a caller gave it: an array of non-empty paths, or undefined. Throws
 * QueryError naming it otherwise (a lone string would be walked one character at a time).
 */
export function checkNetnsDirs(dirs: unknown): void {
  if (dirs === undefined) return;
  if (!Array.isArray(dirs))
    throw new QueryError(
      "netnsDirs",
      String(dirs),
      'expected an array of directory paths, e.g. ["/run/netns"]',
    );
  for (const d of dirs)
    if (typeof d !== "string" || d === "")
      throw new QueryError("netnsDirs", String(d), "each entry must be a directory path");
}

/**
 * Check `netns` as a caller gave it: undefined, "all", a name or path, or a NetNS handle. Throws
 * QueryError naming it otherwise (a number or a plain object would fail deep inside the walk).
 */
function checkNetnsSelector(selector: unknown): void {
  if (selector === undefined || typeof selector === "string" || selector instanceof NetNS) return;
  throw new QueryError(
    "netns",
    describe(selector),
    'expected a NetNS handle, a pinned name, a path, or "all"',
  );
}

/**
 * Check a query whole before planning it: an object of the `known` keys (its call's), and where
 * it runs — a namespace selector and pin directories of the right kinds. Throws QueryError naming
 * the field.
 */
export function checkNamespacedQuery(query: unknown, known: KnownKeys<object>): void {
  checkOptions(query, known, "query");
  const { netns, netnsDirs } = query as { netns?: unknown; netnsDirs?: unknown };
  checkNetnsSelector(netns);
  checkNetnsDirs(netnsDirs);
}

/**
 * One namespace to visit: its handle and what names it (both undefined: the calling thread's own),
 * and the label its sockets carry.
 */
export interface Target {
  netns: NetNS | undefined;
  ref: NetnsRef | undefined;
  label: string | undefined;
}

/**
 * Open the single namespace a selector names. The caller owns the handle. Throws
 * InvalidNetnsNameError, NetnsNotFoundError, NotANetnsError, NetnsError.
 */
function openSelected(selector: NetnsSelector): Target {
  const netns = typeof selector === "string" ? fromLabel(selector) : selector.dup();
  const ref = netns.ref;
  // A name or path the caller gave is what they call it; a handle's ref says what it is.
  if (typeof selector === "string") ref.label = selector;
  return { netns, ref, label: ref.label };
}

/**
 * The namespaces a query visits, in order: the one its `netns` names (opened here and closed when
 * the walk ends; undefined: the caller's own), or with "all" the caller's own and then every pinned
 * or discovered one, failures to open one going to `failures`.
 */
export function* targetsOf(
  selector: NetnsSelector | "all" | undefined,
  options: NamespaceSourceOptions,
  failures: NamespaceFailure[],
): Generator<Target> {
  if (selector === "all") {
    yield* allTargets(options, failures);
    return;
  }
  const target: Target =
    selector === undefined ? { netns: undefined, ref: undefined, label: undefined } : openSelected(selector);
  try {
    yield target;
  } finally {
    target.netns?.close();
  }
}

/**
 * After `err` in `target`: with "all", a namespace other than the caller's own that failed for a
 * reason of its own is recorded in `failures` and the walk goes on; anything else is rethrown (a
 * single namespace, the caller's own, a fatal or foreign error: the query itself cannot work).
 */
export function recordOrThrow(
  selector: NetnsSelector | "all" | undefined,
  target: Target,
  err: unknown,
  failures: NamespaceFailure[],
): void {
  if (selector !== "all" || target.netns === undefined || !isNamespaceScoped(err)) throw err;
  failures.push({ netns: target.label ?? "(host)", error: err });
}

/**
 * Every namespace: the caller's own first (label undefined), then each pinned or discovered one.
 * Handles are lent until the generator moves on. Failures to open one go to `failures`.
 */
function* allTargets(options: NamespaceSourceOptions, failures: NamespaceFailure[]): Generator<Target> {
  const found = walkNetns({ netnsDirs: options.netnsDirs, processes: true, host: "first" });
  let reported = 0;
  const report = () => {
    for (; reported < found.errors.length; reported++) failures.push(found.errors[reported]!);
  };
  for (const entry of found) {
    report();
    yield entry.host
      ? { netns: undefined, ref: undefined, label: undefined }
      : { netns: entry.netns, ref: entry.ref, label: entry.ref.label };
  }
  report();
}

/**
 * Whether an error concerns only the namespace it happened in, so that a run over several may
 * record it and go on: a namespace that cannot be entered, a kernel answer, a device name the
 * namespace lacks. Anything else — a failed return to the caller's namespace, a protocol the kernel
 * lacks, an exception from the caller's own predicate — ends the run.
 */
export function isNamespaceScoped(err: unknown): err is SockdiagError {
  if (isFatalNetnsError(err)) return false;
  return (
    err instanceof NetnsError ||
    err instanceof NetlinkError ||
    err instanceof NetlinkTimeoutError ||
    err instanceof NetlinkProtocolError ||
    err instanceof SysError ||
    err instanceof DecodeError ||
    err instanceof FilterResolveError
  );
}
