/**
 * SocketQuery: what a caller asks for, and its translation into the sock_diag dump requests that
 * answer it. Every name is checked here, before anything is sent to the kernel.
 */
import {
  EXTENSION_BITS,
  EXTENSION_NAMES,
  FAMILY_NAMES,
  familyNumber,
  isInetProtocol,
  isProtocol,
  PROTOCOL_NAMES,
  TCP_CLOSE,
  unixShow,
} from "../diag/constants.js";
import type {
  Extension,
  FamilyProtocol,
  InetFamily,
  InetProtocol,
  PacketType,
  Protocol,
  UnixType,
  VsockType,
} from "../diag/socket.js";
import { ALL_STATES, stateMask, stateWords } from "../diag/states.js";
import { type FilterInput, type PreparedFilter, prepareFilter } from "../filter/index.js";
import { checkBoolean, checkList, type KnownKeys, QueryError } from "../options/index.js";

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
  /** Unix socket types to list (default: all three): ss's unix_stream, unix_dgram, unix_seqpacket. */
  unixTypes?: readonly UnixType[];
  /** Packet socket types to list (default: both): ss's packet_raw, packet_dgram. */
  packetTypes?: readonly PacketType[];
  /** Vsock socket types to list (default: all three): ss's vsock_stream, vsock_dgram (and seqpacket). */
  vsockTypes?: readonly VsockType[];
  /**
   * Leave out the protocols this kernel has no sock_diag handler for (raw, SCTP, vsock, ...)
   * instead of throwing UnsupportedProtocolError — for "everything there is" listings: `true` for
   * every protocol, or the list of those that may be left out. Default false.
   */
  ignoreUnsupported?: boolean | readonly Protocol[];
  /**
   * Decode the attributes the kernel sends unasked (mark, cgroupId, shutdown) even when no
   * extension is asked for. Default false: a listing without them is faster.
   */
  attributes?: boolean;
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
  unixTypes: true,
  packetTypes: true,
  vsockTypes: true,
  ignoreUnsupported: true,
  attributes: true,
};

/** One inet dump to send. */
export interface InetDump {
  protocol: InetProtocol;
  family: number;
  ext: number;
  states: number;
}

/** One dump of a family with a sock_diag handler of its own (packet, netlink, vsock, tipc, xdp). */
export interface FamilyDump {
  protocol: FamilyProtocol;
  states: number;
  /** The socket types kept, when not every one (the handlers cannot be asked for one). */
  types?: ReadonlySet<string> | undefined;
}

/** The requests a query turns into. */
export interface QueryPlan {
  inet: InetDump[];
  /** unix_diag dump, if unix sockets were asked for; `types` set when only some types are. */
  unix?: { states: number; show: number; types?: ReadonlySet<UnixType> | undefined };
  /** The dumps of the other families, in the order asked. */
  families: FamilyDump[];
  /** Whether inet attributes must be decoded (extensions asked for, or read by the filter). */
  attributes: boolean;
  filter: PreparedFilter;
  /** Skip a dump of these protocols the kernel answers with "no handler" (SocketQuery.ignoreUnsupported). */
  ignoreUnsupported: ReadonlySet<Protocol>;
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
  if (typeof query.ignoreUnsupported !== "object") checkBoolean(query.ignoreUnsupported, "ignoreUnsupported");
  else checkList(query.ignoreUnsupported, "ignoreUnsupported");
  for (const field of [
    "protocols",
    "families",
    "exclude",
    "extensions",
    "unixTypes",
    "packetTypes",
    "vsockTypes",
  ] as const)
    checkList(query[field], field);
  if (typeof query.states !== "number") checkList(query.states, "states");
  checkBoolean(query.attributes, "attributes");
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
  const ignore = query.ignoreUnsupported;
  const plan: QueryPlan = {
    inet: [],
    families: [],
    attributes: ext !== 0 || filter.needsAttributes || Boolean(query.attributes),
    filter,
    ignoreUnsupported: new Set(ignore === true ? PROTOCOL_NAMES : ignore === false || !ignore ? [] : ignore),
    unsupported: new Set(),
  };
  const familyTypes: Partial<Record<Protocol, ReadonlySet<string> | undefined>> = {
    packet: typesOf(query.packetTypes, "packetTypes", PACKET_TYPES),
    vsock: typesOf(query.vsockTypes, "vsockTypes", VSOCK_TYPES),
  };
  for (const protocol of new Set(protocols)) {
    if (isInetProtocol(protocol)) {
      for (const family of new Set(families))
        plan.inet.push({ protocol, family: familyNumber(family), ext, states });
      continue;
    }
    if (filter.tree) {
      throw new QueryError(
        "protocols",
        protocol,
        `a filter selects IP sockets; list ${protocol} sockets without one`,
      );
    }
    if (protocol === "unix") {
      plan.unix = {
        states,
        show: unixShow(Boolean(query.extensions?.includes("skmem"))),
        types: typesOf(query.unixTypes, "unixTypes", UNIX_TYPES),
      };
    } else if (!ONE_STATE.has(protocol) || (states & (1 << TCP_CLOSE)) !== 0) {
      // Packet, netlink and XDP sockets are all "close" (ss: UNCONN): other states select none.
      plan.families.push({ protocol, states, types: familyTypes[protocol] });
    }
  }
  return plan;
}

/** The families whose sockets have no state: every one is reported as TCP_CLOSE. */
const ONE_STATE: ReadonlySet<Protocol> = new Set(["packet", "netlink", "xdp"]);
const UNIX_TYPES: readonly UnixType[] = ["stream", "dgram", "seqpacket"];
const PACKET_TYPES: readonly PacketType[] = ["raw", "dgram"];
const VSOCK_TYPES: readonly VsockType[] = ["stream", "dgram", "seqpacket"];

/** The types asked for, checked; undefined when every type is (nothing to leave out). */
function typesOf<T extends string>(
  types: readonly T[] | undefined,
  field: string,
  known: readonly T[],
): ReadonlySet<T> | undefined {
  if (types === undefined) return undefined;
  for (const t of types)
    if (!known.includes(t)) throw new QueryError(field, String(t), `expected one of ${known.join(", ")}`);
  const set = new Set(types);
  return known.every((t) => set.has(t)) ? undefined : set;
}
