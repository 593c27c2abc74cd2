/**
 * A listing scene: one throwaway namespace with a holder child holding one socket of every kind
 * sockdiag lists (TCP, UDP, UDP-Lite, MPTCP over IPv4, IPv6 and v4-mapped IPv6; unix stream, dgram
 * and seqpacket, named, abstract and unnamed), and the checks that compare a listing with the
 * holder's records. Used by the library tests here and by the CLI tests in test/cli/.
 */
import assert from "node:assert/strict";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before } from "node:test";
import { hasDiagHandler } from "../../src/sockets/index.js";
import { cleanupLeftovers, createNetns, type HeldSocket, Holder, type ScratchNetns } from "../kit/index.js";

/** The fields a listed socket is compared on (a Socket, or one object of `ls -j`). */
export interface ListedLike {
  family: string;
  protocol: string;
  state: string;
  inode: number;
  cookie: bigint | string;
  src?: string;
  sport?: number;
  dst?: string;
  dport?: number;
  type?: string;
  name?: string | null | undefined;
  peer?: number | null | undefined;
}

/** A namespace, its holder, and what the holder opened there. `stop()` undoes everything. */
export interface ListScene {
  ns: ScratchNetns;
  holder: Holder;
  /** Every socket the holder opened, with the state sock_diag reports for it now. */
  held: HeldSocket[];
  /** The held sockets a dump lists (an unbound, unconnected UDP socket is in no table). */
  listed: HeldSocket[];
  stop(): Promise<void>;
}

/** Options for startScene. */
export interface SceneOptions {
  /** Label for the namespace name. */
  label?: string;
  /** Include MPTCP sockets (each MPTCP connection also shows TCP subflows under tcp). Default true. */
  mptcp?: boolean;
}

/**
 * startScene creates a namespace, starts a holder in it and opens every kind of socket. On failure
 * it removes what it made and rethrows.
 */
export async function startScene(options: SceneOptions = {}): Promise<ListScene> {
  const ns = await createNetns(options.label ?? "list");
  const dir = mkdtempSync(join(tmpdir(), "sdt-list-"));
  let holder: Holder | undefined;
  const stop = async () => {
    try {
      await holder?.stop();
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await ns.remove();
    }
  };
  try {
    holder = await Holder.start({ netnsPath: ns.path });
    const held = await openEveryKind(holder, dir, ns.name, options.mptcp ?? true);
    return { ns, holder, held, listed: held.filter((s) => s.listed), stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

/** The scene of a suite (useScene), set once its `before` hook has run. */
export interface SuiteScene {
  readonly scene: ListScene;
  /** The scene's namespace name. */
  readonly ns: string;
}

/**
 * useScene registers hooks on the enclosing suite: before its tests, clean up a crashed run's
 * leftovers and start a scene; after them, stop it.
 */
export function useScene(options: SceneOptions): SuiteScene {
  let scene: ListScene | undefined;
  before(async () => {
    await cleanupLeftovers();
    scene = await startScene(options);
  });
  after(async () => {
    await scene?.stop();
  });
  return {
    get scene() {
      assert.ok(scene, "the scene has started");
      return scene;
    },
    get ns() {
      return this.scene.ns.name;
    },
  };
}

/**
 * openEveryKind opens one socket of each kind in `holder` (unix paths under `dir`, abstract names
 * made unique with `tag`) and returns their records, with the states the kernel reports now.
 */
export async function openEveryKind(
  holder: Holder,
  dir: string,
  tag: string,
  mptcp = true,
): Promise<HeldSocket[]> {
  const held: HeldSocket[] = [];
  const open = async (...args: Parameters<Holder["open"]>) => {
    const got = await holder.open(...args);
    held.push(...got);
    return got;
  };
  const first = (got: HeldSocket[]): HeldSocket => {
    assert.ok(got[0], "holder returned no socket");
    return got[0];
  };
  // UDP: unconnected (bound, wildcard, IPv6, dual-stack), connected (IPv4, IPv6, v4-mapped), unbound.
  const udp4 = first(await open({ kind: "udp", bind: { address: "127.0.0.1" } }));
  const udp6 = first(await open({ kind: "udp", bind: { address: "::1" } }));
  await open({ kind: "udp", bind: { address: "0.0.0.0" } });
  await open({ kind: "udp", family: "inet6", bind: { address: "::" } });
  await open({ kind: "udp", connect: { address: "127.0.0.1", port: udp4.sport } });
  await open({ kind: "udp", connect: { address: "::1", port: udp6.sport } });
  await open({ kind: "udp", family: "inet6", connect: { address: "127.0.0.1", port: udp4.sport } });
  await open({ kind: "udp" });
  // UDP-Lite: bound, connected over IPv4 and IPv6.
  const lite = first(await open({ kind: "udp", protocol: "udplite", bind: { address: "127.0.0.1" } }));
  await open({ kind: "udp", protocol: "udplite", connect: { address: "127.0.0.1", port: lite.sport } });
  await open({ kind: "udp", protocol: "udplite", family: "inet6", connect: { address: "::1", port: 9 } });
  // TCP: an IPv4 and a dual-stack IPv6 listener, connections in every family combination.
  const tcp4 = first(await open({ kind: "listener", bind: { address: "127.0.0.1" } }));
  const tcp6 = first(await open({ kind: "listener", family: "inet6" }));
  await open({ kind: "connection", listener: tcp4.id });
  await open({ kind: "connection", listener: tcp4.id, family: "inet6" });
  await open({ kind: "connection", listener: tcp6.id, family: "inet6" });
  await open({ kind: "connection", listener: tcp6.id, family: "inet" });
  if (mptcp) {
    const m4 = first(await open({ kind: "listener", protocol: "mptcp", bind: { address: "127.0.0.1" } }));
    await open({ kind: "connection", listener: m4.id });
    await open({ kind: "listener", protocol: "mptcp", family: "inet6", bind: { address: "::1" } });
  }
  // Unix: stream (path, abstract), seqpacket (abstract), dgram (path, connected, unnamed), pairs.
  const ustream = first(
    await open({ kind: "unix", type: "stream", name: join(dir, "stream"), listen: true }),
  );
  await open({ kind: "connection", listener: ustream.id });
  await open({ kind: "unix", type: "stream", name: `\0${tag}-abstract`, listen: true });
  const useq = first(await open({ kind: "unix", type: "seqpacket", name: `\0${tag}-seq`, listen: true }));
  await open({ kind: "connection", listener: useq.id });
  const udgram = first(await open({ kind: "unix", type: "dgram", name: join(dir, "dgram") }));
  await open({ kind: "connection", listener: udgram.id });
  // unix_dgram_connect() makes the target TCP_ESTABLISHED as well (net/unix/af_unix.c).
  udgram.state = "established";
  await open({ kind: "unix", type: "dgram" });
  await open({ kind: "unix", type: "stream" });
  await open({ kind: "pair", type: "stream" });
  await open({ kind: "pair", type: "dgram" });
  await open({ kind: "pair", type: "seqpacket" });
  return held;
}

/** keyOf identifies a socket across tools: inet by protocol, cookie and inode; unix by inode. */
export function keyOf(s: {
  family: string;
  protocol: string;
  inode: number;
  cookie?: bigint | string;
}): string {
  return s.family === "unix" ? `unix:${s.inode}` : `${s.protocol}:${String(s.cookie)}:${s.inode}`;
}

/**
 * assertSameAsHeld checks that `got` (found by keyOf) shows `held` as the holder recorded it:
 * family, protocol, state, inode and cookie; addresses and ports (inet); type, name and peer (unix).
 */
export function assertSameAsHeld(got: ListedLike, held: HeldSocket): void {
  const what = `held ${JSON.stringify(held)}`;
  assert.deepEqual(
    [got.family, got.protocol, got.state, got.inode, String(got.cookie)],
    [held.family, held.protocol, held.state, held.inode, held.cookie],
    what,
  );
  if (held.family === "unix") {
    assert.deepEqual(
      [got.type, got.name ?? "*", got.peer ?? 0],
      [held.type, held.src, held.peer ?? 0],
      `unix fields of ${what}`,
    );
  } else {
    assert.deepEqual(
      [got.src, got.sport, got.dst, got.dport],
      [held.src, held.sport, held.dst, held.dport],
      `addresses of ${what}`,
    );
  }
}

/** assertAllListed checks every socket of `held` is in `got`, each as the holder recorded it. */
export function assertAllListed(got: readonly ListedLike[], held: readonly HeldSocket[]): void {
  const byKey = new Map(got.map((s) => [keyOf(s), s]));
  for (const h of held) {
    const s = byKey.get(keyOf(h));
    assert.ok(s, `not listed: ${JSON.stringify(h)}`);
    assertSameAsHeld(s, h);
  }
}

/**
 * kernelLacks tells whether this kernel has no sock_diag handler for `protocol` (without raw_diag,
 * raw sockets are still listed, from /proc/net/raw).
 */
export function kernelLacks(protocol: "raw" | "sctp"): boolean {
  return !hasDiagHandler(protocol);
}
