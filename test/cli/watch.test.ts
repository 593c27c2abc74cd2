/**
 * `sockdiag watch` end to end: the built CLI prints the sockets a holder closes in a throwaway
 * namespace, one NDJSON object each, keeps others out with a filter, and exits 0 on SIGINT.
 */
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { describeAsRoot, type HeldSocket, startUdpScene, type UdpScene } from "../kit/index.js";
import { CLI_MAIN } from "./cli.js";

interface Line {
  protocol: string;
  netns: string | null;
  src: string;
  sport: number;
  dst: string;
  dport: number;
  cookie: string;
}

describeAsRoot("sockdiag watch", () => {
  let scene: UdpScene;

  before(async () => {
    scene = await startUdpScene("cli-watch");
  });

  after(async () => {
    await scene?.stop();
  });

  test("prints each closed socket that matches the filter, and exits 0 on SIGINT", async () => {
    const port = scene.receiver.sport;
    const child = spawn(
      process.execPath,
      [CLI_MAIN, "watch", "-u", "-N", scene.ns.name, "--ndjson", "dport", "=", `:${port}`],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    const lines: Line[] = [];
    let stderr = "";
    let buffered = "";
    let changed: () => void = () => {};
    child.stdout.setEncoding("utf8").on("data", (text: string) => {
      buffered += text;
      const parts = buffered.split("\n");
      buffered = parts.pop()!;
      for (const p of parts) lines.push(JSON.parse(p) as Line);
      changed();
    });
    child.stderr.setEncoding("utf8").on("data", (text: string) => {
      stderr += text;
      changed();
    });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const shown = (held: readonly HeldSocket[]) =>
      held.every((h) => lines.some((l) => l.cookie === h.cookie));
    /** Close `held` and wait until the watch printed all of them. */
    const closeAndSee = async (held: HeldSocket[]) => {
      await scene.holder.close(held);
      while (!shown(held)) await new Promise<void>((resolve) => (changed = resolve));
    };
    try {
      // It says on stderr once it is subscribed.
      let ended = false;
      void exited.then(() => {
        ended = true;
        changed();
      });
      while (!stderr.includes("watching 1 namespace") && !ended)
        await new Promise<void>((resolve) => (changed = resolve));
      assert.ok(!ended, `watch ended: ${stderr}`);
      const targets = await scene.clients(4);
      const others = await scene.holder.open(
        { kind: "udp", connect: { address: "127.0.0.1", port: port + 1 } },
        3,
      );
      await scene.holder.close(others);
      // Freed after the others: once these show, the others would have shown before them.
      await closeAndSee(targets);
      for (const t of targets) {
        const line = lines.find((l) => l.cookie === t.cookie)!;
        assert.deepEqual(
          [line.protocol, line.netns, line.src, line.sport, line.dst, line.dport],
          ["udp", scene.ns.name, t.src, t.sport, t.dst, t.dport],
        );
      }
      assert.ok(
        lines.every((l) => l.dport === port),
        "the filter kept the others out",
      );
    } finally {
      child.kill("SIGINT");
    }
    assert.equal(await exited, 0, stderr);
  });
});
