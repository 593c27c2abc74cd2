/**
 * The scene the backend-termination tests run in, modelled on Cilium's TerminateUDPConnectionsToBackend
 * test: the host plus N network namespaces pinned in a test-owned directory (never /run/netns), each
 * with a holder child. In every node two backends A and B listen on 127.0.0.1 and ::1 (the same two
 * ports everywhere; in the host the kernel picks them, so no other test uses them), and each test
 * opens fresh UDP clients connected to them over IPv4, v4-mapped IPv6 and IPv6.
 */
import assert from "node:assert/strict";
import { statSync } from "node:fs";
import { after, afterEach, before } from "node:test";
import { create, type NetNS } from "../../src/netns/index.js";
import { Holder, HolderError } from "../kit/holder.js";
import type { HeldSocket } from "../kit/holder-protocol.js";
import { cleanupScratchLeftovers, type Scratch, scratchDir } from "../netns/helpers.js";

/** What the terminator's report calls the caller's own namespace. */
export const HOST = "(host)";
const EAGAIN = 11;
const EDESTADDRREQ = 89;
/** How long a destroyed client may take to report ECONNABORTED (it is immediate; this only bounds a hang). */
const ABORT_DEADLINE_MS = 2000;

/** Which backend a client talks to, and how: a4 (IPv4 to 127.0.0.1), a4m (IPv6 to ::ffff:127.0.0.1), a6 (IPv6 to ::1). */
export type ClientKind = "a4" | "a4m" | "a6" | "b4" | "b4m" | "b6";
export const CLIENT_KINDS: readonly ClientKind[] = ["a4", "a4m", "a6", "b4", "b4m", "b6"];
/** One node's clients by kind; a4 has two sockets, every other kind one. */
export type Clients = Record<ClientKind, HeldSocket[]>;
/** Every node's clients, by node name. */
export type SceneClients = Map<string, Clients>;

/** The host or one pinned namespace, with the holder child that lives in it. */
export interface SceneNode {
  /** HOST, or the pinned name (what the terminator's report calls it). */
  name: string;
  holder: Holder;
  /** The backends' unconnected receivers: 127.0.0.1:A, ::1:A, 127.0.0.1:B, ::1:B. */
  receivers: HeldSocket[];
}

/** Scene owns its namespaces, pins and holders; `stop()` removes everything. */
export class Scene {
  readonly nodes: SceneNode[] = [];
  readonly portA: number;
  readonly portB: number;
  private readonly handles = new Map<string, NetNS>();

  private constructor(
    private readonly scratch: Scratch,
    ports: [number, number],
  ) {
    [this.portA, this.portB] = ports;
  }

  /** The test-owned pin directory, for `netnsDirs` and `--netns-dir`. */
  get dir(): string {
    return this.scratch.dir;
  }

  /** The pinned namespaces' names, in the order a terminator visits them (directory order). */
  get pinnedNames(): string[] {
    return this.nodes.filter((n) => n.name !== HOST).map((n) => n.name);
  }

  /** The pin path of `name`. */
  pinPath(name: string): string {
    return `${this.dir}/${name}`;
  }

  /**
   * start builds the host node and `count` pinned namespaces named sdt-PID-LABEL-a, -b, ...; on any
   * failure it removes what it made and rethrows.
   */
  static async start(label: string, count = 3): Promise<Scene> {
    cleanupScratchLeftovers();
    const scratch = scratchDir();
    const host = await Holder.start();
    let scene: Scene | undefined;
    try {
      const hostReceivers = await openHostBackends(host);
      const ports: [number, number] = [hostReceivers[0]!.sport, hostReceivers[2]!.sport];
      scene = new Scene(scratch, ports);
      scene.nodes.push({ name: HOST, holder: host, receivers: hostReceivers });
      for (let i = 0; i < count; i++)
        await scene.addNamespace(`sdt-${process.pid}-${label}-${"abcdefgh"[i]}`);
      return scene;
    } catch (err) {
      if (scene) await scene.stop();
      else {
        await host.stop();
        scratch.dispose();
      }
      throw err;
    }
  }

  private async addNamespace(name: string): Promise<void> {
    const ns = create({ loopbackUp: true });
    this.handles.set(name, ns);
    this.scratch.pin(name, ns);
    const holder = await Holder.start({ netnsPath: this.pinPath(name) });
    this.nodes.push({ name, holder, receivers: [] });
    assert.equal(holder.netnsInode, ns.ino);
    this.node(name).receivers = await openBackends(holder, this.portA, this.portB);
  }

  /** The node called `name`. */
  node(name: string): SceneNode {
    const node = this.nodes.find((n) => n.name === name);
    if (!node) throw new Error(`no node ${name} in the scene`);
    return node;
  }

  /** unpin removes `name`'s pin (its namespace lives on in its holder); repin puts it back. */
  unpin(name: string): void {
    this.scratch.unpin(name);
  }

  repin(name: string): void {
    const ns = this.handles.get(name);
    if (!ns) throw new Error(`no namespace ${name} in the scene`);
    this.scratch.pin(name, ns);
  }

  /** Whether `name` is pinned now (so a test can restore a pin it removed). */
  isPinned(name: string): boolean {
    try {
      return statSync(this.pinPath(name)).ino === this.handles.get(name)?.ino;
    } catch {
      return false;
    }
  }

  /** openClients opens a fresh set of clients in every node. */
  async openClients(): Promise<SceneClients> {
    const all: SceneClients = new Map();
    for (const node of this.nodes) {
      const open = (connect: string, port: number, family: "inet" | "inet6", count = 1) =>
        node.holder.open({ kind: "udp", family, connect: { address: connect, port } }, count);
      all.set(node.name, {
        a4: await open("127.0.0.1", this.portA, "inet", 2),
        a4m: await open("127.0.0.1", this.portA, "inet6"),
        a6: await open("::1", this.portA, "inet6"),
        b4: await open("127.0.0.1", this.portB, "inet"),
        b4m: await open("127.0.0.1", this.portB, "inet6"),
        b6: await open("::1", this.portB, "inet6"),
      });
    }
    return all;
  }

  /** closeClients closes what openClients opened (destroyed or not). */
  async closeClients(clients: SceneClients | undefined): Promise<void> {
    if (!clients) return;
    for (const node of this.nodes) {
      const c = clients.get(node.name);
      if (c) await node.holder.close(CLIENT_KINDS.flatMap((k) => c[k]));
    }
  }

  /**
   * expect checks every client of every node: those `hit` says were destroyed report ECONNABORTED
   * on their next read (within a short deadline) and can no longer send (EDESTADDRREQ: the destroy
   * disconnected them); all others have no error pending and still send. The backends' unconnected
   * receivers are alive everywhere.
   */
  async expect(clients: SceneClients, hit: (node: string, kind: ClientKind, socket: HeldSocket) => boolean) {
    for (const node of this.nodes) {
      const c = clients.get(node.name);
      assert.ok(c, `no clients in ${node.name}`);
      const sockets = CLIENT_KINDS.flatMap((kind) => c[kind].map((s) => ({ kind, s })));
      const dead = sockets.filter(({ kind, s }) => hit(node.name, kind, s));
      const alive = sockets.filter((x) => !dead.includes(x));
      const where = (xs: typeof sockets) => `${node.name}: ${xs.map((x) => `${x.kind}#${x.s.id}`).join(" ")}`;
      const polled = await node.holder.poll([...alive.map((x) => x.s), ...node.receivers]);
      assert.ok(
        polled.every((e) => e === 0 || e === EAGAIN),
        `alive sockets must have no error pending, got errnos ${polled} (${where(alive)} + receivers)`,
      );
      assert.deepEqual(
        await node.holder.send(alive.map((x) => x.s)),
        alive.map(() => 0),
        `alive clients must still send (${where(alive)})`,
      );
      if (dead.length === 0) continue;
      await node.holder.waitFor(
        dead.map((x) => x.s),
        "ECONNABORTED",
        ABORT_DEADLINE_MS,
      );
      assert.deepEqual(
        await node.holder.send(dead.map((x) => x.s)),
        dead.map(() => EDESTADDRREQ),
        `destroyed clients are disconnected (${where(dead)})`,
      );
    }
  }

  /** stop ends every holder, unpins and deletes the pin directory, closes the namespace handles. */
  async stop(): Promise<void> {
    await Promise.allSettled(this.nodes.map((n) => n.holder.stop()));
    this.scratch.dispose();
    for (const ns of this.handles.values()) ns.close();
    this.handles.clear();
  }
}

/** The calling thread's network namespace inode, as the kernel reports it. */
export function threadNetnsInode(): number {
  return statSync("/proc/thread-self/ns/net").ino;
}

/** The unconnected receivers of backends A and B at fixed ports (a fresh namespace has them all free). */
async function openBackends(holder: Holder, portA: number, portB: number): Promise<HeldSocket[]> {
  const out: HeldSocket[] = [];
  for (const port of [portA, portB]) {
    for (const address of ["127.0.0.1", "::1"])
      out.push(...(await holder.open({ kind: "udp", bind: { address, port } })));
  }
  return out;
}

/**
 * In the host, the kernel picks each backend's port on 127.0.0.1; the same port on ::1 is taken
 * too, and a port whose ::1 twin is busy is dropped for another. No other test can use them. TCP
 * listeners hold the same ports, so that no host service's TCP clients are counted (or destroyed)
 * by the tests that terminate TCP too.
 */
async function openHostBackends(host: Holder): Promise<HeldSocket[]> {
  const out: HeldSocket[] = [];
  while (out.length < 4) {
    const [v4] = await host.open({ kind: "udp", bind: { address: "127.0.0.1" } });
    const taken: HeldSocket[] = [v4!];
    try {
      const port = v4!.sport;
      const [v6] = await host.open({ kind: "udp", bind: { address: "::1", port } });
      taken.push(v6!);
      for (const address of ["127.0.0.1", "::1"])
        taken.push(...(await host.open({ kind: "listener", bind: { address, port } })));
      out.push(v4!, v6!);
    } catch (err) {
      await host.close(taken);
      if (!(err instanceof HolderError && err.code === "EADDRINUSE")) throw err;
    }
  }
  return out;
}

/**
 * useScene registers, in the describe block it is called in, the hooks every terminator suite
 * needs: a Scene started before its tests (handed to `ready`) and stopped after them, and after
 * each test its clients closed and the caller's thread checked to be in its own namespace still.
 * Returns `open`, which opens a fresh set of clients that the next afterEach closes.
 */
export function useScene(label: string, ready: (scene: Scene) => void): () => Promise<SceneClients> {
  let scene: Scene | undefined;
  let clients: SceneClients | undefined;
  const home = threadNetnsInode();
  before(async () => {
    scene = await Scene.start(label);
    ready(scene);
  });
  after(async () => {
    await scene?.stop();
  });
  afterEach(async () => {
    await scene?.closeClients(clients);
    clients = undefined;
    assert.equal(threadNetnsInode(), home, "the caller's thread must stay in its own namespace");
  });
  return async () => {
    clients = await scene!.openClients();
    return clients;
  };
}
