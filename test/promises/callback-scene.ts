/**
 * The scene of the callback tests of sockdiag/promises: a throwaway namespace with a UDP receiver
 * and three clients connected to it (hooks of the suite that calls useCallbackScene), and what the
 * tests ask of it.
 */
import assert from "node:assert/strict";
import { after, before } from "node:test";
import * as sync from "sockdiag";
import { startUdpScene, type UdpScene } from "../kit/index.js";

/** The counts every destroy report has. */
export type Report = { matched: number; destroyed: number; gone: number; failed: unknown[]; skipped: number };

export const balances = (r: Report) =>
  assert.equal(r.matched, r.destroyed + r.gone + r.failed.length + r.skipped);

/** `promise.then(...orRejection)`: what it rejected with, undefined if it resolved. */
export const orRejection = [() => undefined, (e: unknown) => e] as const;

export interface CallbackScene {
  /** The scene's namespace name. */
  readonly netns: string;
  /** How many clients are connected to the receiver. */
  readonly clients: number;
  /** A query of the clients. */
  query(): { netns: string; protocols: readonly ["udp"]; filter: string };
  /** The receiver, as a backend. */
  backend(): { address: string; port: number };
  /** How many clients are still connected, as the sync API lists them. */
  connected(): number;
}

/** Start the scene before the suite's tests, remove it after. */
export function useCallbackScene(label: string): CallbackScene {
  let scene: UdpScene | undefined;
  const started = () => {
    assert.ok(scene, "the scene is started");
    return scene;
  };
  const CLIENTS = 3;
  before(async () => {
    scene = await startUdpScene(label);
    await scene.clients(CLIENTS);
  });
  after(async () => {
    await scene?.stop();
  });
  const callbackScene: CallbackScene = {
    get netns() {
      return started().ns.name;
    },
    clients: CLIENTS,
    query: () => ({
      netns: started().ns.name,
      protocols: ["udp"] as const,
      filter: `dst 127.0.0.1:${started().receiver.sport}`,
    }),
    backend: () => ({ address: "127.0.0.1", port: started().receiver.sport }),
    connected: () => sync.listSockets({ ...callbackScene.query(), states: ["established"] }).length,
  };
  return callbackScene;
}
