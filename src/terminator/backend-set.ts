/**
 * BackendSet: the backends of one termination run, checked, turned into one destroy query (one dump
 * per namespace, protocol and family, whatever the number of backends), and able to tell which
 * backend a matched socket belongs to, so that every outcome is counted per backend.
 */
import { formatIPv6 } from "../diag/address.js";
import type { InetFamily, InetProtocol, Socket } from "../diag/socket.js";
import { DEFAULT_STATES } from "../diag/states.js";
import { parseIPv6 } from "../filter/prefix.js";
import type { StructuredFilter } from "../filter/structured.js";
import type { DestroyFailure, DestroyOutcome, DestroyQuery, DestroyReport } from "../sockets/index.js";
import { QueryError } from "../sockets/index.js";
import { type Backend, type BackendProtocol, checkBackend, type ParsedBackend } from "./backend.js";

/**
 * Counts of one backend, namespace or run: matched = destroyed + gone + failed.length + skipped.
 * `failed` lists the failures, as in every report.
 */
export interface Tally {
  matched: number;
  destroyed: number;
  gone: number;
  failed: DestroyFailure[];
  skipped: number;
}

/** A backend as a report names it: canonical address text, port and protocol. */
export interface BackendName {
  address: string;
  port: number;
  protocol: BackendProtocol;
}

const PROTOCOLS: readonly BackendProtocol[] = ["udp", "tcp", "any"];

/** A tally with nothing counted. */
export function emptyTally(): Tally {
  return { matched: 0, destroyed: 0, gone: 0, failed: [], skipped: 0 };
}

/** Add a destroy report's counts to a tally. */
export function addToTally(tally: Tally, report: DestroyReport): void {
  tally.matched += report.matched;
  tally.destroyed += report.destroyed;
  tally.gone += report.gone;
  tally.failed.push(...report.failed);
  tally.skipped += report.skipped;
}

/** Add one tally to another. */
export function addTally(total: Tally, other: Tally): void {
  total.matched += other.matched;
  total.destroyed += other.destroyed;
  total.gone += other.gone;
  total.failed.push(...other.failed);
  total.skipped += other.skipped;
}

/** Count one socket's outcome (its failure, for "failed"); a dry run's "matched" counts as matched only. */
export function countOutcome(tally: Tally, outcome: DestroyOutcome, failure?: DestroyFailure): void {
  tally.matched++;
  if (outcome === "failed") {
    if (failure) tally.failed.push(failure);
  } else if (outcome !== "matched") tally[outcome]++;
}

/**
 * BackendSet holds distinct backends in first-seen order. A backend given twice (same address, port
 * and protocol) is one backend. A socket both a "udp" and an "any" backend of the same address and
 * port would cover belongs to the one listed first, so that it is counted once.
 */
export class BackendSet {
  readonly backends: BackendName[] = [];
  private readonly families: ParsedBackend["family"][] = [];
  /** "address port" -> indices of the backends of that endpoint, in order. */
  private readonly byEndpoint = new Map<string, number[]>();

  /**
   * Check every backend before anything is touched: throws AddressError naming a bad address or
   * port, QueryError for an unknown protocol. `protocol` is the default for backends without one.
   */
  constructor(backends: readonly Backend[], protocol: BackendProtocol) {
    for (const backend of backends) {
      const target = checkBackend(backend.address, backend.port);
      const p = backend.protocol ?? protocol;
      if (!PROTOCOLS.includes(p)) throw new QueryError("protocol", String(p), "expected udp, tcp or any");
      const address = target.family === "inet6" ? canonicalIPv6(target.address) : target.address;
      const key = `${address} ${target.port}`;
      const same = this.byEndpoint.get(key) ?? [];
      if (same.some((i) => this.backends[i]!.protocol === p)) continue;
      same.push(this.backends.length);
      this.byEndpoint.set(key, same);
      this.backends.push({ address, port: target.port, protocol: p });
      this.families.push(target.family);
    }
  }

  get size(): number {
    return this.backends.length;
  }

  /**
   * The one destroy query for every backend: the union of their protocols, connected states only
   * (unconnected and listening sockets are never touched), and a filter naming each endpoint, which
   * the kernel applies; `owner` then keeps a socket only if its protocol is its backend's.
   */
  query(veto: ((s: Socket) => boolean) | undefined, dryRun: boolean): DestroyQuery {
    const protocols = new Set<InetProtocol>();
    for (const b of this.backends) {
      if (b.protocol !== "tcp") protocols.add("udp");
      if (b.protocol !== "udp") protocols.add("tcp");
    }
    // An IPv4 backend is reached from IPv6 sockets too, through its v4-mapped address.
    const families: InetFamily[] = this.families.includes("inet") ? ["inet", "inet6"] : ["inet6"];
    const endpoints: StructuredFilter[] = [...this.byEndpoint.keys()].map((key) => {
      const [dst, dport] = key.split(" ") as [string, string];
      return { dst, dport: Number(dport) };
    });
    const mixed = protocols.size > 1 && this.backends.some((b) => b.protocol !== "any");
    const keep =
      mixed || veto
        ? (s: Socket) => (!mixed || this.owner(s) !== undefined) && (!veto || veto(s))
        : undefined;
    return {
      protocols: [...protocols],
      families,
      // ss's default states: for UDP established; for TCP also syn-sent, fin-wait, close-wait, ...
      states: DEFAULT_STATES,
      // The filter's AF_INET address also matches ::ffff:a.b.c.d (ss semantics).
      filter: endpoints.length === 1 ? endpoints[0]! : { or: endpoints },
      ...(keep ? { predicate: keep } : {}),
      dryRun,
    };
  }

  /** The index of the backend `socket` is connected to, or undefined when it is none of them. */
  owner(socket: Socket): number | undefined {
    if (socket.family === "unix") return undefined;
    if (this.backends.length === 1) return this.covers(0, socket.protocol) ? 0 : undefined;
    const dst = socket.dst;
    const address = dst.startsWith("::ffff:") && dst.includes(".") ? dst.slice(7) : dst;
    const same = this.byEndpoint.get(`${address} ${socket.dport}`);
    return same?.find((i) => this.covers(i, socket.protocol));
  }

  private covers(index: number, protocol: string): boolean {
    const p = this.backends[index]!.protocol;
    return p === "any" ? protocol === "udp" || protocol === "tcp" : p === protocol;
  }
}

/** The RFC 5952 text of an IPv6 address, as the kernel's addresses are printed. */
function canonicalIPv6(address: string): string {
  const [w0, w1, w2, w3] = parseIPv6(address)!;
  return formatIPv6(w0, w1, w2, w3);
}
