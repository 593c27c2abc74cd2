/**
 * The `sockdiag-agent` bin as a process: help, usage errors, and a run ended by SIGTERM.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { chmod, mkdir, readdir } from "node:fs/promises";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { after, describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import { keyText } from "../src/backend.js";
import { StateFile } from "../src/state-file.js";
import {
  processAlive,
  StandInApiServer,
  scratchDir,
  TestPlugin,
  udpSlice,
  until,
  untilDead,
} from "./kit/index.js";

/** The bin as users run it: the committed bin file, which runs the bundle. */
const BIN = fileURLToPath(new URL("../../bin/sockdiag-agent.js", import.meta.url));
const env = { ...process.env, NODE_EXTRA_CA_CERTS: "" };
const cleanups: (() => Promise<void>)[] = [];

/** How the child ended (its exit code or signal), undefined while it runs. */
function exited(child: ChildProcess): number | NodeJS.Signals | undefined {
  return child.exitCode ?? child.signalCode ?? undefined;
}
after(async () => {
  for (const c of cleanups) await c();
});

describe("sockdiag-agent bin", () => {
  test("--help exits 0; a bad flag or variable exits 2 naming it", () => {
    const help = spawnSync(process.execPath, [BIN, "--help"], { encoding: "utf8", env });
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^Usage: sockdiag-agent/);
    assert.match(help.stdout, /SOCKDIAG_AGENT_COALESCE_MS/);
    const bad = spawnSync(process.execPath, [BIN, "--on-terminating=drain"], { encoding: "utf8", env });
    assert.equal(bad.status, 2);
    assert.match(bad.stderr, /--on-terminating: expected terminate, keep/);
    const badEnv = spawnSync(process.execPath, [BIN], {
      encoding: "utf8",
      env: { ...env, SOCKDIAG_AGENT_PROTOCOLS: "quic" },
    });
    assert.equal(badEnv.status, 2);
    assert.match(badEnv.stderr, /SOCKDIAG_AGENT_PROTOCOLS: unknown protocol "quic"/);
    const version = spawnSync(process.execPath, [BIN, "--version"], { encoding: "utf8", env });
    assert.match(version.stdout, /^sockdiag-agent \d+\.\d+\.\d+\n$/);
  });

  test("runs against a kubeconfig, logs JSON lines, and on SIGTERM saves its state and exits 0", async () => {
    const api = await StandInApiServer.start();
    cleanups.push(() => api.close());
    const dir = await scratchDir("bin");
    cleanups.push(dir.remove);
    api.apply(udpSlice("dns-a", "dns", 53, ["10.9.0.1", "10.9.0.2"]));
    const kubeconfig = await api.writeKubeconfig(join(dir.path, "kubeconfig.json"));
    const child = spawn(
      process.execPath,
      [
        BIN,
        "--kubeconfig",
        kubeconfig,
        "--state-dir",
        join(dir.path, "state"),
        "--listen",
        "127.0.0.1:0",
        "--no-discover",
      ],
      { env: { ...env, SOCKDIAG_AGENT_NETNS_DIRS: dir.path }, stdio: ["ignore", "pipe", "inherit"] },
    );
    cleanups.push(async () => {
      if (exited(child) === undefined) child.kill("SIGKILL");
    });
    const lines: Record<string, unknown>[] = [];
    createInterface({ input: child.stdout }).on("line", (line) => lines.push(JSON.parse(line)));
    await until(() => lines.some((l) => l.msg === "endpointslices synced"), 20_000, "the agent's first sync");
    const started = lines.find((l) => l.msg === "agent started")!;
    const ready = await fetch(`http://${started.listen as string}/readyz`);
    assert.equal(ready.status, 200);
    child.kill("SIGTERM");
    await until(() => exited(child) !== undefined, 20_000, "the agent to exit after SIGTERM");
    assert.equal(child.exitCode, 0);
    assert.ok(lines.some((l) => l.msg === "agent stopped"));
    const saved = await new StateFile(join(dir.path, "state")).load();
    assert.deepEqual([...saved.backends.keys()].map(keyText).sort(), ["10.9.0.1:53/udp", "10.9.0.2:53/udp"]);
  });

  test("SIGTERM while the kubeconfig's exec plugin hangs: the agent exits 0, and the plugin and its child are gone", async () => {
    const api = await StandInApiServer.start();
    cleanups.push(() => api.close());
    const dir = await scratchDir("bin-exec");
    cleanups.push(dir.remove);
    const plugin = await TestPlugin.create(dir.path);
    await plugin.answer({ token: api.token });
    await plugin.hang(true);
    const kubeconfig = await api.writeKubeconfig(join(dir.path, "kubeconfig.json"), plugin.user());
    const child = spawn(
      process.execPath,
      [BIN, "--kubeconfig", kubeconfig, "--state-dir", join(dir.path, "state"), "--listen", "127.0.0.1:0"],
      { env: { ...env, SOCKDIAG_AGENT_NETNS_DIRS: dir.path }, stdio: ["ignore", "ignore", "inherit"] },
    );
    cleanups.push(async () => {
      if (child.exitCode === null) child.kill("SIGKILL");
    });
    await until(async () => (await plugin.childPids()).length > 0, 10_000, "the plugin to hang");
    const [pid] = await plugin.pids();
    const [grandchild] = await plugin.childPids();
    child.kill("SIGTERM");
    await until(() => child.exitCode !== null, 20_000, "the agent to exit");
    assert.equal(child.exitCode, 0);
    assert.equal(await processAlive(pid!), false, "the plugin outlived the agent");
    await untilDead(grandchild!, "the plugin's child, killed with it");
    assert.equal(api.counts.list, 0, "no request went out without a credential");
  });

  test("killed with SIGKILL while a save of 200,000 backends is being written: the file is whole, and a restarted agent reads it", async () => {
    const api = await StandInApiServer.start();
    cleanups.push(() => api.close());
    const dir = await scratchDir("bin-kill");
    cleanups.push(dir.remove);
    const address = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
    const slice = (s: number, first = 0) =>
      udpSlice(
        `svc${s}-x`,
        `svc${s}`,
        53,
        [0, 1, 2, 3].map((i) => address(s * 8 + i + first + 1)),
      );
    for (let s = 0; s < 50_000; s++) api.apply(slice(s));
    const kubeconfig = await api.writeKubeconfig(join(dir.path, "kubeconfig.json"));
    const stateDir = join(dir.path, "state");
    const run = () => {
      const child = spawn(
        process.execPath,
        [
          BIN,
          "--kubeconfig",
          kubeconfig,
          "--state-dir",
          stateDir,
          "--listen",
          "127.0.0.1:0",
          "--no-discover",
        ],
        {
          env: { ...env, SOCKDIAG_AGENT_NETNS_DIRS: dir.path, SOCKDIAG_AGENT_COALESCE_MS: "0" },
          stdio: ["ignore", "pipe", "inherit"],
        },
      );
      const lines: Record<string, unknown>[] = [];
      createInterface({ input: child.stdout }).on("line", (line) => lines.push(JSON.parse(line)));
      cleanups.push(async () => {
        if (exited(child) === undefined) child.kill("SIGKILL");
      });
      return { child, lines };
    };
    const first = run();
    const state = new StateFile(stateDir);
    await until(async () => (await state.load()).backends.size > 0, 120_000, "the first state file");
    // Changes one after the other, each a save; the kill comes while one is being written.
    let changes = 0;
    const churn = setInterval(() => api.apply(slice(changes % 50_000, ++changes % 2)), 20);
    const writing = async () => (await readdir(stateDir)).some((name) => name.endsWith(".tmp"));
    try {
      await until(writing, 120_000, "a save being written");
      first.child.kill("SIGKILL");
      await until(() => exited(first.child) !== undefined, 20_000, "the agent killed with SIGKILL to exit");
    } finally {
      clearInterval(churn);
    }
    assert.ok(await writing(), "the kill left the save it interrupted behind");
    const saved = await state.load();
    assert.equal(saved.problem, undefined);
    assert.equal(saved.invalid, 0);
    // Each change moves one backend of a Service: the set is 200,000 backends, and the one moved.
    assert.ok(
      saved.backends.size >= 200_000 && saved.backends.size <= 200_000 + changes,
      `${saved.backends.size}`,
    );
    const second = run();
    await until(
      () => second.lines.some((l) => l.msg === "state loaded"),
      60_000,
      "the restarted agent's load",
    );
    const loaded = second.lines.find((l) => l.msg === "state loaded")!;
    assert.equal(loaded.backends, saved.backends.size);
    assert.ok(!second.lines.some((l) => l.msg === "state file unusable"));
    second.child.kill("SIGTERM");
    await until(
      () => exited(second.child) !== undefined,
      20_000,
      "the restarted agent to exit after SIGTERM",
    );
  });

  test("no cluster configuration, or a state directory others may write: one JSON line and exit 1", async () => {
    const dir = await scratchDir("bin-fail");
    cleanups.push(dir.remove);
    const bare: NodeJS.ProcessEnv = { ...env };
    for (const k of ["KUBECONFIG", "KUBERNETES_SERVICE_HOST", "SOCKDIAG_AGENT_KUBECONFIG"]) delete bare[k];
    const none = spawnSync(process.execPath, [BIN, "--state-dir", dir.path], { encoding: "utf8", env: bare });
    assert.equal(none.status, 1);
    assert.equal(none.stderr, "");
    const lines = none.stdout.trim().split("\n");
    assert.equal(lines.length, 1, none.stdout);
    const line = JSON.parse(lines[0]!) as { level: number; msg: string; err: { message: string } };
    assert.equal(line.level, 60);
    assert.match(line.err.message, /no Kubernetes configuration: give --kubeconfig/);
    // KUBECONFIG is read when no flag names a file; a state directory writable by others is refused.
    const api = await StandInApiServer.start();
    cleanups.push(() => api.close());
    const kubeconfig = await api.writeKubeconfig(join(dir.path, "kubeconfig.json"));
    const open = join(dir.path, "open");
    await mkdir(open, { mode: 0o777 });
    await chmod(open, 0o777);
    const refused = spawnSync(process.execPath, [BIN, "--state-dir", open, "--listen", "127.0.0.1:0"], {
      encoding: "utf8",
      env: { ...bare, KUBECONFIG: kubeconfig },
    });
    assert.equal(refused.status, 1);
    const last = JSON.parse(refused.stdout.trim().split("\n").pop()!) as {
      msg: string;
      err: { message: string };
    };
    assert.equal(last.msg, "cannot start");
    assert.match(last.err.message, new RegExp(`state directory ${open}: .*writable`));
    assert.equal(api.counts.list, 0, "nothing was asked of the API server");
  });
});
