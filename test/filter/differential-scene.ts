/**
 * The filter scene: one throwaway namespace holding a few hundred varied inet sockets for the filter
 * layer's real-kernel tests (differential against `ss`, kernel program against JS predicate). TCP
 * listeners and connections, UDP bound, connected and autobound, over IPv4, IPv6 and v4-mapped IPv6,
 * on many ports and on addresses added to `lo` — so that most conditions of the corpus select some
 * sockets and leave others out. Traffic stays inside the namespace.
 */
import type { InetSocket } from "../../src/diag/socket.js";
import { listSockets, type NamespacedQuery } from "../../src/sockets/index.js";
import { createNetns, type HeldSocket, Holder, type ScratchNetns, type SocketSpec } from "../kit/index.js";

/** IPv4 addresses added to `lo` (10.1.0.1 with its /24, the others /32), besides 127.0.0.1. */
export const SCENE_V4 = [
  "10.1.0.1",
  "10.1.0.2",
  "10.1.0.3",
  "10.1.0.4",
  "10.1.0.5",
  "10.1.0.6",
  "10.0.0.1",
  "10.0.0.2",
  "192.168.7.1",
] as const;
/** IPv6 addresses added to `lo` (fd00::1 with its /64, the others /128), besides ::1. */
export const SCENE_V6 = [
  "fd00::1",
  "fd00::2",
  "fd00::3",
  "fd00::4",
  "fd00::5",
  "fd00::6",
  "2001:db8::1",
] as const;

/** A namespace, the holder in it and what it holds. `stop()` ends the holder and removes the namespace. */
export interface FilterScene {
  ns: ScratchNetns;
  holder: Holder;
  /** Every socket the holder opened (all of them are listed by sock_diag). */
  held: HeldSocket[];
  stop(): Promise<void>;
}

/** startFilterScene creates the namespace and the sockets; on failure it removes what it made and rethrows. */
export async function startFilterScene(label = "filter"): Promise<FilterScene> {
  const ns = await createNetns(label);
  let holder: Holder | undefined;
  const stop = async () => {
    try {
      await holder?.stop();
    } finally {
      await ns.remove();
    }
  };
  try {
    await addAddresses(ns);
    holder = await Holder.start({ netnsPath: ns.path });
    const held = await openSockets(holder);
    return { ns, holder, held, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

async function addAddresses(ns: ScratchNetns): Promise<void> {
  for (const [i, a] of SCENE_V4.entries())
    await ns.ip("addr", "add", `${a}/${i === 0 ? 24 : 32}`, "dev", "lo");
  // nodad: an address on lo is usable at once, without waiting for duplicate address detection.
  for (const [i, a] of SCENE_V6.entries())
    await ns.ip("-6", "addr", "add", `${a}/${i === 0 ? 64 : 128}`, "dev", "lo", "nodad");
}

/** A port, or a run of ports: socket i of a batch binds `from + i`. */
type Ports = number | { from: number; to: number };

const listener = (address: string, port: Ports): SocketSpec => ({
  kind: "listener",
  bind: { address, port },
});
const bound = (address: string, port: Ports): SocketSpec => ({ kind: "udp", bind: { address, port } });
/** UDP sockets bound to `address` on ports `from`.. and connected to `to`; the family follows the addresses. */
const connectedFrom = (
  address: string,
  from: number,
  count: number,
  to: string,
  port: number,
): SocketSpec => ({
  kind: "udp",
  bind: { address, port: { from, to: from + count - 1 } },
  connect: { address: to, port },
});

/**
 * openSockets opens the population. Ports are chosen to straddle the interesting bounds: well-known
 * service ports (22 ssh, 53 domain, 80 http, 443 https), 1023/1024, runs of ports 5000-5039 and
 * 6000-6019, and ports inside net.ipv4.ip_local_port_range (32768-60999) bound explicitly, so that
 * "in the ephemeral range" and "autobound" differ.
 */
async function openSockets(h: Holder): Promise<HeldSocket[]> {
  const held: HeldSocket[] = [];
  const open = async (spec: SocketSpec, count = 1) => {
    const got = await h.open(spec, count);
    held.push(...got);
    return got;
  };
  const listen = async (address: string, port: Ports, count = 1) =>
    (await open(listener(address, port), count))[0]!;
  const connect = (target: HeldSocket, count: number, family?: "inet" | "inet6") =>
    open({ kind: "connection", listener: target.id, ...(family ? { family } : {}) }, count);

  // TCP listeners: IPv4, IPv6, dual-stack wildcards, a run of ports.
  const byAddress = new Map<string, HeldSocket>();
  for (const a of SCENE_V4.slice(0, 6))
    for (const port of [53, 80, 443]) byAddress.set(`${a}:${port}`, await listen(a, port));
  for (const a of SCENE_V6.slice(0, 6))
    for (const port of [53, 80]) byAddress.set(`[${a}]:${port}`, await listen(a, port));
  const lo22 = await listen("127.0.0.1", 22);
  await listen("127.0.0.1", 1024);
  await listen("10.0.0.1", 65535);
  await listen("192.168.7.1", 1023);
  const any8080 = await listen("0.0.0.0", 8080);
  await listen("0.0.0.0", 40000);
  const six22 = await listen("::1", 22);
  await listen("2001:db8::1", 443);
  const dual8081 = await listen("::", 8081);
  await listen("::", 40001);
  await listen("10.1.0.1", { from: 5000, to: 5039 }, 40);
  await listen("fd00::2", { from: 5000, to: 5019 }, 20);

  // TCP connections (client and accepted socket each), some through v4-mapped IPv6.
  await connect(byAddress.get("10.1.0.1:80")!, 3);
  await connect(byAddress.get("10.1.0.1:80")!, 2, "inet6");
  await connect(byAddress.get("10.1.0.2:53")!, 2);
  await connect(byAddress.get("[fd00::1]:80")!, 3);
  await connect(byAddress.get("[fd00::3]:53")!, 1);
  await connect(lo22, 2);
  await connect(lo22, 1, "inet6");
  await connect(six22, 2);
  await connect(any8080, 2);
  await connect(dual8081, 2, "inet");
  await connect(dual8081, 2, "inet6");

  // UDP: bound only.
  for (const a of [...SCENE_V4.slice(0, 6), ...SCENE_V6.slice(0, 6)]) await open(bound(a, 53));
  await open(bound("0.0.0.0", 123));
  await open(bound("0.0.0.0", 60999));
  await open(bound("::", 124));
  await open(bound("::1", 65535));
  await open(bound("127.0.0.1", 1023));
  await open(bound("10.1.0.3", { from: 7000, to: 7029 }), 30);
  // UDP: bound and connected; v4-mapped on both ends; explicitly bound inside the ephemeral range.
  await open(connectedFrom("10.1.0.4", 6000, 20, "10.1.0.5", 53), 20);
  await open(connectedFrom("::ffff:10.1.0.4", 6100, 10, "10.1.0.6", 53), 10);
  await open(connectedFrom("fd00::3", 6000, 20, "fd00::4", 53), 20);
  await open(connectedFrom("10.1.0.5", 40002, 10, "10.0.0.1", 80), 10);
  // UDP: connected without bind (the kernel picks the port: autobound).
  await open({ kind: "udp", connect: { address: "10.1.0.5", port: 53 } }, 10);
  await open({ kind: "udp", connect: { address: "192.168.7.1", port: 1023 } }, 5);
  await open({ kind: "udp", connect: { address: "fd00::5", port: 53 } }, 10);
  await open({ kind: "udp", family: "inet6", connect: { address: "127.0.0.1", port: 53 } }, 5);
  await open({ kind: "udp", connect: { address: "2001:db8::1", port: 443 } }, 3);
  return held;
}

/** listScene lists the scene's TCP and UDP sockets in every state (as `ss -a -t -u`) through the library. */
export function listScene(
  scene: FilterScene,
  filter: NamespacedQuery["filter"],
  kernelFilter = true,
): InetSocket[] {
  const query = {
    netns: scene.ns.name,
    protocols: ["tcp", "udp"] as const,
    states: ["all"],
    filter,
    kernelFilter,
  };
  return listSockets(query) as InetSocket[];
}
