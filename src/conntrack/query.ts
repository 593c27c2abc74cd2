/**
 * ConntrackQuery: which entries a caller means, checked before anything is sent, and compiled into
 * the dump filter the kernel applies (CTA_FILTER, CTA_MARK) and the predicate user space applies
 * after it — always, because old kernels ignore CTA_FILTER and because the kernel cannot express
 * everything (IPv6 addresses, zone 0, alternatives).
 */
import {
  AF_INET,
  AF_INET6,
  AF_UNSPEC,
  type ConntrackEntry,
  CT_PROTOCOLS,
  type DumpFilter,
  hasPorts,
  type TupleFilter,
} from "../ctnl/index.js";
import { formatIPv6, parseDottedQuad, parseIPv6 } from "../diag/address.js";
import { SELECTION_KEYS as NAMESPACE_KEYS, type NamespaceSelection } from "../netns/index.js";
import { checkBoolean, checkOptions, describe, type KnownKeys, QueryError } from "../options/index.js";
import { ConntrackQueryError } from "./errors.js";

/** Fields of one tuple to select by: exact addresses and ports. */
export interface ConntrackTupleSelection {
  src?: string;
  dst?: string;
  sport?: number;
  dport?: number;
}

/** Which entries: every field given must match. */
export interface ConntrackSelection {
  /** "udp", "tcp", "icmp", ... or an IP protocol number. */
  protocol?: string | number;
  family?: "inet" | "inet6";
  /** The original direction (the first packet's source, destination and ports). */
  original?: ConntrackTupleSelection;
  /** The reply direction: for a DNATed flow its source is the backend the flow was sent to. */
  reply?: ConntrackTupleSelection;
  zone?: number;
  /**
   * Entries whose mark, ANDed with markMask (default 0xffffffff), equals mark — as conntrack's
   * `--mark MARK/MASK` and the kernel's CTA_MARK/CTA_MARK_MASK mean it: the mark is not masked, so
   * a mark with bits outside the mask matches nothing. A zero mask selects every entry: no selection.
   * A mask without a mark is refused (QueryError).
   */
  mark?: number;
  markMask?: number;
}

/** A selection, where to look (see NamespaceSelection; default: the caller's own namespace), and how. */
export interface ConntrackQuery extends ConntrackSelection, NamespaceSelection {
  /**
   * Alternatives: an entry must match the fields above and at least one of these (an empty list
   * matches nothing). Lets one dump per namespace serve several backends.
   */
  anyOf?: readonly ConntrackSelection[];
  /** Ask the kernel to filter where it can (default true); the user-space check runs either way. */
  kernelFilter?: boolean;
}

interface CompiledTuple {
  src?: string;
  dst?: string;
  sport?: number;
  dport?: number;
}

/** A checked selection: canonical addresses, numbers. */
interface Compiled {
  family?: number;
  protocol?: number;
  original: CompiledTuple;
  reply: CompiledTuple;
  zone?: number;
  mark?: { value: number; mask: number };
}

/** What a query turns into: the kernel's part and the user-space check. */
export interface ConntrackPlan {
  /** One dump per filter (one per family at most). */
  filters: DumpFilter[];
  matches: (entry: ConntrackEntry) => boolean;
  /** Whether the selection names an address, port, zone or mark (deletion refuses otherwise). */
  narrow: boolean;
  /** An empty list of alternatives: nothing can match, no dump is needed. */
  nothing: boolean;
}

const FAMILIES: Record<string, number> = { inet: AF_INET, inet6: AF_INET6 };

const TUPLE_KEYS: KnownKeys<ConntrackTupleSelection> = { src: true, dst: true, sport: true, dport: true };

const SELECTION_KEYS: KnownKeys<ConntrackSelection> = {
  protocol: true,
  family: true,
  original: true,
  reply: true,
  zone: true,
  mark: true,
  markMask: true,
};

/** The keys of ConntrackQuery, for checkOptions. */
export const CONNTRACK_QUERY_KEYS: KnownKeys<ConntrackQuery> = {
  ...SELECTION_KEYS,
  ...NAMESPACE_KEYS,
  anyOf: true,
  kernelFilter: true,
};

/**
 * Check a conntrack query's selection and compile it (its keys and namespaces are its call's to
 * check). Throws QueryError for a field of the wrong kind, ConntrackQueryError naming the
 * offending field.
 */
export function planConntrack(query: ConntrackQuery): ConntrackPlan {
  checkBoolean(query.kernelFilter, "kernelFilter");
  if (query.anyOf !== undefined && !Array.isArray(query.anyOf))
    throw new QueryError("anyOf", String(query.anyOf), "expected an array of selections");
  const top = compile(query, "");
  const alternatives = query.anyOf?.map((s, i) => {
    checkOptions(s, SELECTION_KEYS, `anyOf[${i}]`);
    return compile(s, `anyOf[${i}].`);
  });
  const topMatches = entryMatcher(top);
  let matches = topMatches;
  if (alternatives) {
    const each = alternatives.map(entryMatcher);
    matches = (e) => topMatches(e) && each.some((m) => m(e));
  }
  return {
    filters:
      query.kernelFilter === false ? [{ family: top.family ?? AF_UNSPEC }] : kernelFilters(top, alternatives),
    matches,
    nothing: alternatives?.length === 0,
    narrow: isNarrow(top) || alternatives?.every(isNarrow) === true,
  };
}

/**
 * One dump filter per family to ask. The kernel applies CTA_FILTER only within one family (with
 * AF_UNSPEC it matches nothing), so a selection of both families that the kernel can narrow is
 * asked as two dumps, each with what that family's alternatives share.
 */
function kernelFilters(top: Compiled, alternatives: readonly Compiled[] | undefined): DumpFilter[] {
  const families =
    top.family !== undefined
      ? [top.family]
      : alternatives?.every((a) => a.family !== undefined)
        ? [...new Set(alternatives.map((a) => a.family!))].sort((x, y) => x - y)
        : [AF_INET, AF_INET6];
  const filters = families.flatMap((family) => {
    const mine = alternatives?.filter((a) => a.family === undefined || a.family === family);
    if (mine && mine.length === 0) return [];
    return [dumpFilter({ ...overlay(top, mine ? common(mine) : EMPTY), family })];
  });
  const needsFamily = (f: DumpFilter) =>
    f.protocol !== undefined || f.orig !== undefined || f.reply !== undefined;
  if (top.family === undefined && filters.length === 2 && !filters.some(needsFamily)) {
    const { family: _, ...rest } = filters[0]!;
    return [{ ...rest, family: AF_UNSPEC }];
  }
  return filters;
}

const EMPTY: Compiled = Object.freeze({ original: {}, reply: {} });

function compile(s: ConntrackSelection, prefix: string): Compiled {
  const out: Compiled = { original: {}, reply: {} };
  if (s.family !== undefined) {
    out.family = FAMILIES[s.family];
    if (out.family === undefined)
      throw new ConntrackQueryError(`${prefix}family`, s.family, "expected inet or inet6");
  }
  if (s.protocol !== undefined) out.protocol = protocolNumber(s.protocol, `${prefix}protocol`);
  out.original = compileTuple(s.original, `${prefix}original`, out);
  out.reply = compileTuple(s.reply, `${prefix}reply`, out);
  if (s.zone !== undefined) out.zone = uint(s.zone, 0xffff, `${prefix}zone`);
  if (s.markMask !== undefined && s.mark === undefined)
    throw new QueryError(
      `${prefix}markMask`,
      describe(s.markMask),
      "a mask without a mark selects nothing by itself: give mark too (mark 0 for entries whose masked mark is 0)",
    );
  if (s.mark !== undefined) {
    const mask = s.markMask === undefined ? 0xffffffff : uint(s.markMask, 0xffffffff, `${prefix}markMask`);
    out.mark = { value: uint(s.mark, 0xffffffff, `${prefix}mark`), mask };
  }
  return out;
}

function compileTuple(t: ConntrackTupleSelection | undefined, field: string, sel: Compiled): CompiledTuple {
  const out: CompiledTuple = {};
  if (t === undefined) return out;
  checkOptions(t, TUPLE_KEYS, field);
  if (t.src !== undefined) out.src = address(t.src, `${field}.src`, sel);
  if (t.dst !== undefined) out.dst = address(t.dst, `${field}.dst`, sel);
  if (t.sport !== undefined) out.sport = port(t.sport, `${field}.sport`, sel);
  if (t.dport !== undefined) out.dport = port(t.dport, `${field}.dport`, sel);
  return out;
}

function protocolNumber(p: string | number, field: string): number {
  if (typeof p === "number") return uint(p, 255, field);
  const n =
    typeof p === "string" && Object.hasOwn(CT_PROTOCOLS, p.toLowerCase())
      ? CT_PROTOCOLS[p.toLowerCase()]
      : undefined;
  if (n === undefined)
    throw new ConntrackQueryError(
      field,
      p,
      `expected one of ${Object.keys(CT_PROTOCOLS).join(", ")} or a number`,
    );
  return n;
}

function uint(n: number, max: number, field: string): number {
  if (!Number.isInteger(n) || n < 0 || n > max)
    throw new ConntrackQueryError(field, n, `expected an integer from 0 to ${max}`);
  return n;
}

function port(n: number, field: string, sel: Compiled): number {
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw new ConntrackQueryError(field, n, "expected a port from 0 to 65535");
  if (sel.protocol !== undefined && !hasPorts(sel.protocol))
    throw new ConntrackQueryError(field, n, `protocol ${sel.protocol} has no ports`);
  return n;
}

/** The canonical text of an exact address; sets (or checks) the selection's family. */
function address(text: string, field: string, sel: Compiled): string {
  let family: number;
  let canonical: string;
  if (typeof text === "string" && parseDottedQuad(text) !== undefined) {
    family = AF_INET;
    canonical = text;
  } else {
    const words = typeof text === "string" ? parseIPv6(text) : undefined;
    if (!words) throw new ConntrackQueryError(field, text, "not an IPv4 or IPv6 address");
    family = AF_INET6;
    canonical = formatIPv6(...words);
  }
  if (sel.family !== undefined && sel.family !== family)
    throw new ConntrackQueryError(
      field,
      text,
      `an ${family === AF_INET ? "IPv4" : "IPv6"} address in an ${sel.family === AF_INET ? "IPv4" : "IPv6"} selection`,
    );
  sel.family = family;
  return canonical;
}

/** `base` with the fields it leaves open taken from `extra`. */
function overlay(base: Compiled, extra: Compiled): Compiled {
  const out: Compiled = {
    ...extra,
    ...base,
    original: { ...extra.original, ...base.original },
    reply: { ...extra.reply, ...base.reply },
  };
  for (const k of ["family", "protocol", "zone", "mark"] as const) if (out[k] === undefined) delete out[k];
  if (base.family !== undefined && extra.family !== undefined && base.family !== extra.family) {
    // Addresses of the other family cannot go to the kernel with this family.
    out.original = { ...base.original };
    out.reply = { ...base.reply };
  }
  return out;
}

/** The fields every alternative shares, with the same value: what the kernel can filter for all. */
function common(all: readonly Compiled[]): Compiled {
  const [first, ...rest] = all;
  if (!first) return { original: {}, reply: {} };
  const same = <T>(get: (c: Compiled) => T): T | undefined => {
    const v = get(first);
    return rest.every((c) => get(c) === v) ? v : undefined;
  };
  const tuple = (dir: "original" | "reply"): CompiledTuple => {
    const t: CompiledTuple = {};
    for (const f of ["src", "dst"] as const) {
      const v = same((c) => c[dir][f]);
      if (v !== undefined) t[f] = v;
    }
    for (const f of ["sport", "dport"] as const) {
      const v = same((c) => c[dir][f]);
      if (v !== undefined) t[f] = v;
    }
    return t;
  };
  const out: Compiled = { original: tuple("original"), reply: tuple("reply") };
  const family = same((c) => c.family);
  const protocol = same((c) => c.protocol);
  const zone = same((c) => c.zone);
  const markValue = same((c) => c.mark?.value);
  const markMask = same((c) => c.mark?.mask);
  if (family !== undefined) out.family = family;
  if (protocol !== undefined) out.protocol = protocol;
  if (zone !== undefined) out.zone = zone;
  if (markValue !== undefined && markMask !== undefined) out.mark = { value: markValue, mask: markMask };
  return out;
}

/**
 * The kernel's part. IPv6 addresses are left to user space: the kernel's IPv6 CTA_FILTER comparison
 * was inverted when it was introduced (5.8), so on such kernels it would hide the very entries
 * asked for, and no user-space check could bring them back.
 */
function dumpFilter(c: Compiled): DumpFilter {
  const f: DumpFilter = { family: c.family ?? AF_UNSPEC };
  if (c.protocol !== undefined) f.protocol = c.protocol;
  const tuple = (t: CompiledTuple): TupleFilter | undefined => {
    const out: TupleFilter = {};
    if (f.family === AF_INET && t.src) out.src = ipv4Bytes(t.src);
    if (f.family === AF_INET && t.dst) out.dst = ipv4Bytes(t.dst);
    if (f.protocol !== undefined && t.sport !== undefined) out.sport = t.sport;
    if (f.protocol !== undefined && t.dport !== undefined) out.dport = t.dport;
    return Object.keys(out).length > 0 ? out : undefined;
  };
  const orig = tuple(c.original);
  const reply = tuple(c.reply);
  if (orig) f.orig = orig;
  if (reply) f.reply = reply;
  if (c.mark) f.mark = c.mark;
  if (c.zone !== undefined && c.zone !== 0) f.zone = c.zone;
  return f;
}

function ipv4Bytes(text: string): Uint8Array {
  return Uint8Array.from(text.split(".").map(Number));
}

function isNarrow(c: Compiled): boolean {
  const t = (x: CompiledTuple) =>
    x.src !== undefined || x.dst !== undefined || x.sport !== undefined || x.dport !== undefined;
  // A zero mask compares no bit: with mark 0 it selects every entry (no selection), with another none.
  return (
    t(c.original) ||
    t(c.reply) ||
    c.zone !== undefined ||
    (c.mark !== undefined && (c.mark.mask !== 0 || c.mark.value !== 0))
  );
}

/** The user-space check of one compiled selection. */
function entryMatcher(c: Compiled): (e: ConntrackEntry) => boolean {
  const family = c.family === undefined ? undefined : c.family === AF_INET ? "inet" : "inet6";
  const tupleOk = (t: CompiledTuple, e: ConntrackEntry["original"]) =>
    (t.src === undefined || e.src === t.src) &&
    (t.dst === undefined || e.dst === t.dst) &&
    (t.sport === undefined || e.sport === t.sport) &&
    (t.dport === undefined || e.dport === t.dport);
  return (e) =>
    (family === undefined || e.family === family) &&
    (c.protocol === undefined || e.protocolNumber === c.protocol) &&
    (c.zone === undefined || e.zone === c.zone) &&
    (c.mark === undefined || (e.mark & c.mark.mask) >>> 0 === c.mark.value) &&
    tupleOk(c.original, e.original) &&
    tupleOk(c.reply, e.reply);
}
