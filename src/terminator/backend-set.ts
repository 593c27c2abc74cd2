/**
 * BackendSet: the backends of one termination run, checked, turned into one destroy query (one dump
 * per namespace, protocol and family, whatever the number of backends), and able to tell which
 * backend a matched socket belongs to, so that every outcome is counted per backend.
 */
import { type InetFamily, type InetProtocol, isInetSocket, type Socket } from "../diag/socket.js";
import { DEFAULT_STATES } from "../diag/states.js";
import type { StructuredFilter } from "../filter/index.js";
import { checkOptions, type KnownKeys, QueryError } from "../options/index.js";
import type { DestroyQuery } from "../sockets/index.js";
import { type Backend, checkBackend, checkBackendObject, type ParsedBackend } from "./backend.js";
import type { BackendName, BackendProtocol } from "./report.js";

const BACKEND_KEYS: KnownKeys<Backend> = { address: true, port: true, protocol: true };

const PROTOCOLS: readonly BackendProtocol[] = ["udp", "tcp", "any"];

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
    if (!Array.isArray(backends))
      throw new QueryError("backends", String(backends), "expected an array of { address, port, protocol? }");
    for (const item of backends) {
      const backend = checkBackendObject(item);
      checkOptions(backend, BACKEND_KEYS, "backend");
      const target = checkBackend(backend.address, backend.port);
      const p = backend.protocol ?? protocol;
      if (!PROTOCOLS.includes(p)) throw new QueryError("protocol", String(p), "expected udp, tcp or any");
      const { address } = target;
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
   * Whether a run with this `conntrack` option (default on) deletes conntrack entries: only UDP
   * flows are, so not where every backend is TCP only.
   */
  conntrackWanted(option: boolean | undefined): boolean {
    return option !== false && this.backends.some((b) => b.protocol !== "tcp");
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
    if (!isInetSocket(socket)) return undefined;
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
