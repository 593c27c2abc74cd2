/**
 * Benchmark scenes that look like production: throwaway namespaces full of CONNECTED UDP sockets,
 * from hundreds of source addresses in 127/8 to hundreds of destination addresses, on varied ports
 * (a table of few addresses, or of unconnected sockets, flatters address formatting). The sockets
 * are held by the test kit's holder children, at most PER_HOLDER each (the per-process descriptor
 * limit here is 20,000).
 */
import { createNetns, Holder, removeNetns, type ScratchNetns } from "../test/kit/index.js";

/** The installed command: the bundle package.json names as `bin`. */
export const CLI = new URL("../../src/cli/bin.cjs", import.meta.url).pathname;

const PER_HOLDER = 19_000;
/** Sockets that share a source address and a destination (one holder request). */
const GROUP = 50;
/** Distinct source addresses (127.NET.x.y) and destination addresses (127.200.x.y) of a scene. */
export const SOURCES = 400;
export const DESTINATIONS = 500;
const FIRST_PORT = 1024;
const PORTS = 64_000;

/** The i-th address of 127.NET/16, skipping .0 and .251 and up. */
function address(net: number, i: number): string {
  return `127.${net}.${Math.floor(i / 250)}.${(i % 250) + 1}`;
}

export interface Endpoint {
  address: string;
  port: number;
}

/** Sockets connected to the target, or to one of the scene's destinations, from one source. */
interface Group {
  count: number;
  bind: { address: string; port: { from: number; to: number } };
  connect: { address: string; port: number };
}

/**
 * The groups of a spread: `targetCount` sockets to target, the rest to DESTINATIONS addresses on
 * varied ports; group g from source g % SOURCES, on a port range no other group of that source uses.
 */
function groups(total: number, target: Endpoint, targetCount: number, sourceNet: number): Group[] {
  const sizes: { n: number; toTarget: boolean }[] = [];
  for (let left = targetCount; left > 0; left -= GROUP)
    sizes.push({ n: Math.min(GROUP, left), toTarget: true });
  for (let left = total - targetCount; left > 0; left -= GROUP)
    sizes.push({ n: Math.min(GROUP, left), toTarget: false });
  const block = Math.floor(PORTS / Math.ceil(sizes.length / SOURCES));
  if (block < 2 * GROUP) throw new Error(`scene: ${total} sockets need more source addresses`);
  return sizes.map(({ n, toTarget }, g) => {
    const source = g % SOURCES;
    const from = FIRST_PORT + Math.floor(g / SOURCES) * block + ((source * 37) % (block - GROUP));
    return {
      count: n,
      bind: { address: address(sourceNet, source), port: { from, to: from + n - 1 } },
      connect: toTarget
        ? target
        : { address: address(200, (g * 7) % DESTINATIONS), port: FIRST_PORT + ((g * 7919) % PORTS) },
    };
  });
}

/** Holders of spread sockets; stop() closes them. */
export interface Spread {
  holders: Holder[];
  stop(): Promise<void>;
}

/**
 * Open `total` connected UDP sockets in the namespace at nsPath, `targetCount` of them to target,
 * from source addresses 127.sourceNet.x.y (a caller that opens several spreads in one namespace
 * gives each its own sourceNet).
 */
export async function openSpread(
  nsPath: string,
  spread: { total: number; target: Endpoint; targetCount: number; sourceNet: number },
): Promise<Spread> {
  const perHolder: Group[][] = [];
  let held = PER_HOLDER;
  for (const group of groups(spread.total, spread.target, spread.targetCount, spread.sourceNet)) {
    if (held + group.count > PER_HOLDER) {
      perHolder.push([]);
      held = 0;
    }
    perHolder.at(-1)!.push(group);
    held += group.count;
  }
  const holders: Holder[] = [];
  const stop = async () => {
    await Promise.allSettled(holders.map((h) => h.stop()));
  };
  const opened = await Promise.allSettled(
    perHolder.map(async (mine) => {
      const holder = await Holder.start({ netnsPath: nsPath });
      holders.push(holder);
      for (const g of mine) await holder.open({ kind: "udp", bind: g.bind, connect: g.connect }, g.count);
    }),
  );
  const failed = opened.find((r) => r.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  return { holders, stop };
}

/** A namespace with `total` connected UDP sockets (openSpread), `targetCount` of them to target. */
export interface UdpScene {
  netns: ScratchNetns;
  stop(): Promise<void>;
}

export async function udpScene(
  label: string,
  total: number,
  target: Endpoint,
  targetCount: number,
): Promise<UdpScene> {
  const netns = await createNetns(label);
  try {
    const spread = await openSpread(netns.path, { total, target, targetCount, sourceNet: 1 });
    return {
      netns,
      async stop() {
        await spread.stop();
        await removeNetns(netns.name);
      },
    };
  } catch (err) {
    await removeNetns(netns.name);
    throw err;
  }
}

/** What a scene is made of, for the bench's headings. */
export function sceneNote(total: number): string {
  return `${total.toLocaleString("en-US")} connected UDP sockets, from ${SOURCES} source addresses to ${DESTINATIONS} destination addresses in 127/8, on varied ports`;
}
