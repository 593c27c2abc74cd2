/**
 * A population of UDP sockets in one namespace, spread over as many holder children as needed
 * (at most `perHolder` each, default 19,000: the per-process descriptor limit here is 20,000).
 * `targetCount` sockets are connected to the target ip:port, the rest to other ports or not at all.
 * For tests and benchmarks of listing and destroying at scale.
 *
 * Every socket is bound before it connects, holder h to 127.0.(h+1).1 with ports from 1024 on: a
 * namespace has only ~28,000 ephemeral ports, too few for 100,000 autobound sockets. The target
 * must be an IPv4 address reachable in the namespace (127.0.0.0/8, or an address added to `lo`).
 */
import { Holder } from "./holder.js";
import type { HeldSocket } from "./holder-protocol.js";
import { type Endpoint, familyOf } from "./sockaddr.js";

/** What the sockets that do not talk to the target do. */
export type OthersMode = "other-ports" | "unconnected" | "mixed";

/** Options for Population.start. */
export interface PopulationOptions {
  /** Namespace file the holders enter (/run/netns/NAME); default the caller's namespace. */
  netnsPath?: string;
  /** Number of sockets in all. */
  total: number;
  /** The backend the target sockets are connected to (IPv4). */
  target: Endpoint;
  /** How many sockets connect to `target`; the others never do. */
  targetCount: number;
  /**
   * "other-ports": connected to the target address on one of the next OTHER_PORTS ports;
   * "unconnected": bound only; "mixed" (default): half each.
   */
  others?: OthersMode;
  /** Sockets per holder child; default 19,000. */
  perHolder?: number;
  protocol?: "udp" | "udplite";
}

/** One socket of a population and the holder that holds it. */
export interface PopulationMember {
  holder: Holder;
  socket: HeldSocket;
}

/** How many different ports the "other-ports" sockets are spread over. */
export const OTHER_PORTS = 10;
const FIRST_PORT = 1024;

/** Population owns its holders; `stop()` closes every socket and ends every holder. */
export class Population {
  private constructor(
    /** The holder children, in order. */
    readonly holders: readonly Holder[],
    /** The sockets connected to the target. */
    readonly targets: readonly PopulationMember[],
    /** Every other socket. */
    readonly others: readonly PopulationMember[],
  ) {}

  /** start opens the population; on any failure it stops the holders it started and rethrows. */
  static async start(options: PopulationOptions): Promise<Population> {
    const { total, targetCount, target } = options;
    const perHolder = options.perHolder ?? 19_000;
    if (!Number.isInteger(total) || total < 1) throw new Error(`population: bad total ${total}`);
    if (!Number.isInteger(targetCount) || targetCount < 0 || targetCount > total) {
      throw new Error(`population: targetCount ${targetCount} not within 0..${total}`);
    }
    if (familyOf(target.address) !== "inet")
      throw new Error(`population: target must be IPv4: ${target.address}`);
    const count = Math.ceil(total / perHolder);
    if (count > 254) throw new Error(`population: ${count} holders needed, at most 254 source addresses`);
    const sizes = splitEven(total, count);
    const targetShares = splitEven(targetCount, count);
    const started: Holder[] = [];
    const parts = await Promise.allSettled(
      sizes.map(async (size, h) => {
        const holder = await Holder.start(options.netnsPath ? { netnsPath: options.netnsPath } : {});
        started.push(holder);
        return fill(holder, h, size, targetShares[h] ?? 0, options);
      }),
    );
    const failed = parts.find((p) => p.status === "rejected");
    if (failed) {
      await Promise.allSettled(started.map((holder) => holder.stop()));
      throw failed.reason;
    }
    const filled = parts.map((p) => (p as PromiseFulfilledResult<Awaited<ReturnType<typeof fill>>>).value);
    return new Population(
      filled.map((p) => p.holder),
      filled.flatMap((p) => p.targets),
      filled.flatMap((p) => p.others),
    );
  }

  /** size is the number of sockets held. */
  get size(): number {
    return this.targets.length + this.others.length;
  }

  /** poll returns each member's recv errno (Holder.poll), in the order given. */
  async poll(members: readonly PopulationMember[]): Promise<number[]> {
    const out = new Array<number>(members.length);
    await Promise.all(
      [...byHolder(members)].map(async ([holder, idx]) => {
        const errnos = await holder.poll(idx.map((i) => (members[i] as PopulationMember).socket));
        idx.forEach((i, k) => {
          out[i] = errnos[k] as number;
        });
      }),
    );
    return out;
  }

  /** waitFor resolves when every member reported `errnoName` (Holder.waitFor, all holders at once). */
  async waitFor(members: readonly PopulationMember[], errnoName: string, timeoutMs = 10_000): Promise<void> {
    await Promise.all(
      [...byHolder(members)].map(([holder, idx]) =>
        holder.waitFor(
          idx.map((i) => (members[i] as PopulationMember).socket),
          errnoName,
          timeoutMs,
        ),
      ),
    );
  }

  /** stop ends every holder (closing its sockets); the first failure is thrown after all were stopped. */
  async stop(): Promise<void> {
    const results = await Promise.allSettled(this.holders.map((h) => h.stop()));
    const failed = results.find((r) => r.status === "rejected");
    if (failed) throw failed.reason;
  }

  /** Symbol.asyncDispose stops the population, for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }
}

/** fill opens one holder's share: `targets` sockets to the target, then `size - targets` others. */
async function fill(holder: Holder, h: number, size: number, targets: number, options: PopulationOptions) {
  const protocol = options.protocol ?? "udp";
  const address = `127.0.${h + 1}.1`;
  let port = FIRST_PORT;
  const open = async (n: number, connect?: Endpoint): Promise<PopulationMember[]> => {
    if (n === 0) return [];
    const bind = { address, port: { from: port, to: port + n - 1 } };
    port += n;
    const records = await holder.open(
      connect ? { kind: "udp", protocol, bind, connect } : { kind: "udp", protocol, bind },
      n,
    );
    return records.map((socket) => ({ holder, socket }));
  };
  const result = { holder, targets: await open(targets, options.target), others: [] as PopulationMember[] };
  const rest = size - targets;
  const mode = options.others ?? "mixed";
  const connected = mode === "other-ports" ? rest : mode === "unconnected" ? 0 : Math.ceil(rest / 2);
  const perPort = splitEven(connected, OTHER_PORTS);
  for (let k = 0; k < OTHER_PORTS; k++) {
    const otherPort = ((options.target.port + k) % 65535) + 1; // target.port + 1 + k, wrapping past 65535 to 1
    result.others.push(
      ...(await open(perPort[k] ?? 0, { address: options.target.address, port: otherPort })),
    );
  }
  result.others.push(...(await open(rest - connected)));
  return result;
}

/** splitEven splits n into `parts` integers differing by at most one, larger ones first. */
export function splitEven(n: number, parts: number): number[] {
  const base = Math.floor(n / parts);
  return Array.from({ length: parts }, (_, i) => base + (i < n % parts ? 1 : 0));
}

function byHolder(members: readonly PopulationMember[]): Map<Holder, number[]> {
  const groups = new Map<Holder, number[]>();
  members.forEach((m, i) => {
    const g = groups.get(m.holder);
    if (g) g.push(i);
    else groups.set(m.holder, [i]);
  });
  return groups;
}
