/**
 * BackendScene: a few network namespaces, pinned in a directory of the scene's own (never
 * /run/netns, so that the agent under test visits only these and the host), each with a holder
 * child, UDP receivers bound to every backend address, and clients connected to them. Backend
 * addresses are on 127.13.0.0/16, which nothing else on the machine uses.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdirSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { addNetns, removeNetns } from "sockdiag";
import { type HeldSocket, Holder } from "sockdiag-test-kit";

const EAGAIN = 11;
const PREFIX = "sdt-agent-";

export interface SceneNode {
  name: string;
  holder: Holder;
  /** The unconnected receiver bound to each backend address. */
  receivers: Map<string, HeldSocket>;
  /** Whether dnat() has set up its table here. */
  dnat?: boolean;
}

/** Clients of one backend, by node. */
export type BackendClients = Map<SceneNode, HeldSocket[]>;

export class BackendScene {
  readonly nodes: SceneNode[] = [];
  private readonly open: BackendClients[] = [];

  private constructor(
    readonly dir: string,
    readonly port: number,
  ) {}

  /** `count` namespaces with receivers on every address of `backends`, all on `port`. */
  static async start(
    label: string,
    count: number,
    backends: readonly string[],
    port = 5353,
  ): Promise<BackendScene> {
    removeLeftovers();
    const dir = join(tmpdir(), `${PREFIX}${process.pid}-${label}`);
    mkdirSync(dir);
    const scene = new BackendScene(dir, port);
    try {
      for (let i = 0; i < count; i++) {
        const name = `ns${i}`;
        addNetns(name, { dir, loopbackUp: true }).close();
        const holder = await Holder.start({ netnsPath: join(dir, name) });
        const receivers = new Map<string, HeldSocket>();
        scene.nodes.push({ name, holder, receivers });
        for (const address of backends) {
          const [receiver] = await holder.open({ kind: "udp", bind: { address, port } });
          receivers.set(address, receiver!);
        }
      }
      return scene;
    } catch (err) {
      await scene.stop();
      throw err;
    }
  }

  /** `perNode` fresh clients of `address` in every node. */
  async clients(address: string, perNode = 2): Promise<BackendClients> {
    const out: BackendClients = new Map();
    for (const node of this.nodes)
      out.set(node, await node.holder.open({ kind: "udp", connect: { address, port: this.port } }, perNode));
    this.open.push(out);
    return out;
  }

  /** Close every client opened so far (receivers stay). */
  async closeClients(): Promise<void> {
    for (const clients of this.open.splice(0))
      for (const [node, sockets] of clients) await node.holder.close(sockets);
  }

  /** Resolves when every client has seen ECONNABORTED; rejects after `timeoutMs`. */
  async aborted(clients: BackendClients, timeoutMs: number): Promise<void> {
    await Promise.all(
      [...clients].map(([node, sockets]) => node.holder.waitFor(sockets, "ECONNABORTED", timeoutMs)),
    );
  }

  /** Asserts that every client is still connected (recv says EAGAIN, not ECONNABORTED). */
  async assertAlive(clients: BackendClients, what: string): Promise<void> {
    for (const [node, sockets] of clients) {
      const errnos = await node.holder.poll(sockets);
      assert.deepEqual(
        errnos,
        sockets.map(() => EAGAIN),
        `${what} in ${node.name}`,
      );
    }
  }

  /**
   * DNAT in `node`, as kube-proxy does for a Service's virtual IP: datagrams its processes send to
   * `vip` (scene port) go to `backend` instead. Called again, it points the rule at another
   * backend; flows already tracked keep their old destination (their conntrack entry says so).
   */
  async dnat(node: SceneNode, vip: string, backend: string): Promise<void> {
    const rules = [
      "table ip sdt_agent {",
      "  chain out {",
      "    type nat hook output priority -100;",
      `    ip daddr ${vip} udp dport ${this.port} dnat to ${backend}:${this.port}`,
      "  }",
      "}",
    ];
    const script = node.dnat ? ["flush table ip sdt_agent", ...rules] : rules;
    const r = spawnSync("nsenter", [`--net=${join(this.dir, node.name)}`, "nft", "-f", "-"], {
      input: `${script.join("\n")}\n`,
      encoding: "utf8",
    });
    if (r.status !== 0) throw new Error(`nft in ${node.name} failed: ${r.stderr || r.error?.message}`);
    node.dnat = true;
  }

  /** Which backend addresses received a datagram since the last look (each receiver drained). */
  async received(node: SceneNode): Promise<string[]> {
    const out: string[] = [];
    for (const [address, receiver] of node.receivers) {
      let errnos = await node.holder.poll([receiver]);
      if (errnos[0] !== 0) continue;
      out.push(address);
      while (errnos[0] === 0) errnos = await node.holder.poll([receiver]);
    }
    return out;
  }

  static count(clients: BackendClients): number {
    let n = 0;
    for (const sockets of clients.values()) n += sockets.length;
    return n;
  }

  async stop(): Promise<void> {
    for (const node of this.nodes) await node.holder.stop();
    removeScene(this.dir);
  }
}

function removeScene(dir: string): void {
  for (const name of readdirSync(dir)) removeNetns(name, { dir });
  // Pinning made the directory a shared bind mount of itself (as `ip netns` does with /run/netns).
  spawnSync("umount", ["--lazy", dir], { stdio: "ignore" });
  rmSync(dir, { recursive: true, force: true });
}

/** Scenes left by a test process that died. */
function removeLeftovers(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(new RegExp(`^${PREFIX}(\\d+)-`).exec(name)?.[1] ?? Number.NaN);
    if (Number.isNaN(pid) || pid === process.pid || alive(pid)) continue;
    removeScene(join(tmpdir(), name));
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}
