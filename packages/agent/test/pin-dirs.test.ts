/**
 * The agent's pin directories are looked at where they exist: deploy/ names the host's ip netns,
 * Cilium and Docker directories on every node, and a node without Cilium or Docker has no
 * directory of theirs. Real kernel: clients in a namespace pinned in the one directory that exists.
 */
import assert from "node:assert/strict";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { libraryTerminator } from "../src/terminator.js";
import { BackendScene, describeAsRoot } from "./kit/index.js";

const BACKEND = "127.13.1.1";

describeAsRoot("the agent's pin directories", () => {
  let scene: BackendScene;
  before(async () => {
    scene = await BackendScene.start("pins", 1, [BACKEND]);
  });
  after(async () => {
    await scene?.stop();
  });

  test("a named pin directory that the node lacks holds nothing: no error, the one that exists is visited", async () => {
    const clients = await scene.clients(BACKEND);
    const terminator = libraryTerminator({
      netnsDirs: [join(scene.dir, "cilium-absent"), scene.dir, join(scene.dir, "docker-absent")],
      discover: false,
      conntrack: false,
      dryRun: false,
    });
    try {
      const outcome = await terminator.terminate([{ address: BACKEND, port: scene.port, protocol: "udp" }]);
      assert.deepEqual(outcome.errors, []);
      assert.equal(outcome.sockets.destroyed, BackendScene.count(clients));
      await scene.aborted(clients, 15_000);
    } finally {
      await terminator.close?.();
    }
  });
});
