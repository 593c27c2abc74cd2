/**
 * The exec credential plugin, run for real (a shell script, test/kit/exec-plugin.ts): the
 * protocol as client-go speaks it, a plugin's output as untrusted input, and a plugin that hangs.
 */
import assert from "node:assert/strict";
import { chmod, mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { type ExecCall, ExecCredentials } from "../src/exec-credential.js";
import {
  type ExecCredential,
  ExecPluginError,
  execPluginConfig,
  MAX_STDOUT_BYTES,
  parseExecCredential,
} from "../src/exec-plugin.js";
import { ConfigError, loadKubeConfig } from "../src/kubeconfig.js";
import { RequestAuth } from "../src/request-auth.js";
import {
  EXEC_V1,
  makeCertificate,
  processAlive,
  scratchDir,
  TestPlugin,
  until,
  untilDead,
} from "./kit/index.js";

const cleanups: (() => Promise<void>)[] = [];
after(async () => {
  for (const c of cleanups) await c();
});

async function plugin(): Promise<TestPlugin> {
  const dir = await scratchDir("exec");
  cleanups.push(dir.remove);
  return TestPlugin.create(dir.path);
}

function credentials(p: TestPlugin, exec: Record<string, unknown> = {}, options = {}): ExecCredentials {
  const c = new ExecCredentials(execPluginConfig(p.user(exec).exec, "agent"), {
    timeoutMs: 10_000,
    ...options,
  });
  cleanups.push(() => c.close());
  return c;
}

const signal = () => new AbortController().signal;

/** The error `promise` rejects with, which must be an ExecPluginError. */
async function execError(promise: Promise<unknown>): Promise<ExecPluginError> {
  const err = await promise.then(
    () => assert.fail("expected the plugin to fail"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof ExecPluginError, `not an ExecPluginError: ${String(err)}`);
  return err;
}

describe("the exec plugin protocol", () => {
  test("runs the command with its args and env over the agent's, KUBERNETES_EXEC_INFO, no stdin; caches the token", async () => {
    const p = await plugin();
    await p.answer({ token: "t-1" });
    const c = credentials(
      p,
      { env: [{ name: "PLUGIN_PROBE", value: "from-kubeconfig" }], provideClusterInfo: true },
      { env: { PATH: process.env.PATH, PLUGIN_PROBE: "from-agent" }, cluster: { server: "https://x:6443" } },
    );
    const got = await c.get(signal());
    assert.equal(got.token, "t-1");
    assert.equal(got.expiresAt, undefined);
    const seen = await p.seen();
    assert.equal(seen.probe, "from-kubeconfig");
    assert.equal(seen.stdin, "/dev/null");
    assert.deepEqual(seen.execInfo, {
      apiVersion: EXEC_V1,
      kind: "ExecCredential",
      spec: { interactive: false, cluster: { server: "https://x:6443" } },
    });
    // Cached: no second run, even with the answer changed.
    await p.answer({ token: "t-2" });
    assert.equal((await c.get(signal())).token, "t-1");
    assert.equal((await p.pids()).length, 1);
  });

  test("v1beta1 defaults interactiveMode; the answer's apiVersion must be the one asked", async () => {
    const p = await plugin();
    const beta = "client.authentication.k8s.io/v1beta1";
    await p.answer({ token: "b" }, beta);
    const c = credentials(p, { apiVersion: beta, interactiveMode: undefined });
    assert.equal((await c.get(signal())).token, "b");
    assert.deepEqual((await p.seen()).execInfo, {
      apiVersion: beta,
      kind: "ExecCredential",
      spec: { interactive: false },
    });
    const wrong = credentials(p);
    const err = await execError(wrong.get(signal()));
    assert.equal(err.outcome, "invalid");
    assert.match(
      err.message,
      /apiVersion "client.authentication.k8s.io\/v1beta1", but the kubeconfig asks for client.authentication.k8s.io\/v1/,
    );
  });

  test("the kubeconfig's exec section is checked as clientcmd checks it, naming the field", () => {
    const bad: [Record<string, unknown>, RegExp][] = [
      [
        { apiVersion: "client.authentication.k8s.io/v1alpha1" },
        /exec.apiVersion: "client.authentication.k8s.io\/v1alpha1" is not one of/,
      ],
      [{ command: "" }, /exec.command: a non-empty string is required/],
      [{ args: ["a", 1] }, /exec.args: a list of strings/],
      [{ env: [{ name: "", value: "x" }] }, /exec.env\[0\]: a name/],
      [{ env: [{ name: "A" }] }, /exec.env\[0\]: a name/],
      [{ args: ["a\0b"] }, /exec.args: a list of strings/],
      [{ interactiveMode: undefined }, /exec.interactiveMode: required for client.authentication.k8s.io\/v1/],
      [{ interactiveMode: "Always" }, /exec.interactiveMode: Always needs a terminal/],
      [{ interactiveMode: "Sometimes" }, /exec.interactiveMode: "Sometimes" is not/],
    ];
    for (const [change, message] of bad) {
      const exec = { apiVersion: EXEC_V1, command: "/bin/true", interactiveMode: "Never", ...change };
      assert.throws(
        () => execPluginConfig(exec, "agent"),
        (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, message);
          assert.match(err.message, /^user "agent": /);
          return true;
        },
      );
    }
    const ifAvailable = execPluginConfig(
      { apiVersion: EXEC_V1, command: "p", interactiveMode: "IfAvailable" },
      "u",
    );
    assert.equal(ifAvailable.command, "p");
  });
});

describe("where the plugin's command is found", () => {
  test("a relative path from the kubeconfig's directory, a bare name through PATH", async () => {
    const p = await plugin();
    await p.answer({ token: "t" });
    const file = join(p.dir, "kubeconfig.json");
    await writeFile(
      file,
      JSON.stringify({
        clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
        users: [{ name: "u", user: p.user({ command: "./plugin.sh" }) }],
        contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
        "current-context": "x",
      }),
    );
    const { kubeConfig } = loadKubeConfig(file, {});
    assert.equal(kubeConfig.getCurrentUser()?.exec.command, p.command);
    const fromFile = new RequestAuth(kubeConfig);
    cleanups.push(() => fromFile.close());
    assert.equal((await fromFile.forRequest(signal())).headers.authorization, "Bearer t");
    const fromPath = credentials(
      p,
      { command: "plugin.sh" },
      { env: { PATH: `relative:${p.dir}:${process.env.PATH}` } },
    );
    assert.equal((await fromPath.get(signal())).token, "t");
    assert.equal((await p.pids()).length, 2);
  });
});

describe("a plugin's output is untrusted", () => {
  test("each unusable answer is refused with an error naming the field", () => {
    const v1 = (status: unknown) => JSON.stringify({ apiVersion: EXEC_V1, kind: "ExecCredential", status });
    const cases: [string, RegExp][] = [
      ["not json", /stdout is not JSON/],
      ["[1]", /stdout is not an object/],
      [
        JSON.stringify({ apiVersion: EXEC_V1, kind: "Secret", status: { token: "x" } }),
        /kind "Secret" is not ExecCredential/,
      ],
      [JSON.stringify({ apiVersion: EXEC_V1, kind: "ExecCredential" }), /status is missing/],
      [v1({}), /status has no token and no clientCertificateData/],
      [v1({ token: 42 }), /status.token is not a string/],
      [v1({ token: "a\r\nX-Evil: 1" }), /status.token holds characters/],
      [v1({ clientCertificateData: "x" }), /only one of clientCertificateData and clientKeyData/],
      [
        v1({ clientCertificateData: "x", clientKeyData: "y" }),
        /status.clientCertificateData is not a PEM certificate/,
      ],
      [
        v1({ token: "t", expirationTimestamp: "tomorrow" }),
        /status.expirationTimestamp "tomorrow" is not RFC 3339/,
      ],
      [v1({ token: "t", expirationTimestamp: 5 }), /status.expirationTimestamp is not a string/],
    ];
    for (const [stdout, message] of cases) {
      assert.throws(
        () => parseExecCredential(stdout, EXEC_V1),
        (err: unknown) => {
          assert.ok(err instanceof ExecPluginError, String(err));
          assert.equal(err.outcome, "invalid");
          assert.match(err.message, message);
          return true;
        },
      );
    }
  });

  test("a client certificate and its key are taken; a key of another certificate is refused", async () => {
    const [a, b] = await Promise.all([makeCertificate(), makeCertificate()]);
    const status = {
      clientCertificateData: a.cert,
      clientKeyData: a.key,
      expirationTimestamp: "2030-01-02T03:04:05Z",
    };
    const ok = parseExecCredential(
      JSON.stringify({ apiVersion: EXEC_V1, kind: "ExecCredential", status }),
      EXEC_V1,
    );
    assert.deepEqual(ok, {
      token: undefined,
      cert: a.cert,
      key: a.key,
      expiresAt: Date.UTC(2030, 0, 2, 3, 4, 5),
    });
    const mixed = JSON.stringify({
      apiVersion: EXEC_V1,
      kind: "ExecCredential",
      status: { ...status, clientKeyData: b.key },
    });
    assert.throws(
      () => parseExecCredential(mixed, EXEC_V1),
      /status.clientKeyData is not the key of status.clientCertificateData/,
    );
  });

  test("a plugin that writes without end is killed at the bound; one that fails says why, with its stderr", async () => {
    const p = await plugin();
    const flood = credentials(p, { command: "/bin/sh", args: ["-c", "exec cat /dev/zero"] });
    const err = await execError(flood.get(signal()));
    assert.equal(err.outcome, "invalid");
    assert.match(err.message, new RegExp(`more than ${MAX_STDOUT_BYTES} bytes to stdout; killed`));
    assert.equal(await processAlive(err.pid!), false);
    await p.fail(true);
    const failing = await execError(credentials(p).get(signal()));
    assert.equal(failing.outcome, "failed");
    assert.match(failing.message, /exited with status 3: no credentials for you/);
    assert.equal(failing.stderr, "no credentials for you");
  });

  test("a missing command names its install hint; a plugin others may change is not run", async () => {
    const p = await plugin();
    await p.answer({ token: "t" });
    const missing = await execError(
      credentials(p, { command: "no-such-plugin-here", installHint: "apt install it" }).get(signal()),
    );
    assert.equal(missing.outcome, "failed");
    assert.match(missing.message, /no-such-plugin-here was not found: apt install it/);
    const open = join(p.dir, "open");
    await mkdir(open);
    await chmod(open, 0o777);
    const other = await TestPlugin.create(open);
    await other.answer({ token: "t" });
    const refused = await execError(credentials(other).get(signal()));
    assert.match(refused.message, new RegExp(`${open} is writable by group or others \\(mode 777\\)`));
    assert.deepEqual(await other.pids(), [], "the plugin never ran");
  });
});

describe("a plugin that hangs", () => {
  test("is killed with its children at the timeout, reported, and the next run recovers", async () => {
    const p = await plugin();
    await p.answer({ token: "t" });
    await p.hang(true);
    const calls: ExecCall[] = [];
    const c = credentials(p, {}, { timeoutMs: 300, onCall: (call: ExecCall) => calls.push(call) });
    const err = await execError(c.get(signal()));
    assert.equal(err.outcome, "timeout");
    assert.match(err.message, /did not answer within 0.3 s; killed/);
    // What the run got to start before its timeout (under load, maybe not its child yet) is gone.
    assert.equal(await processAlive(err.pid!), false, "the plugin is gone");
    for (const child of await p.childPids()) await untilDead(child, "the child it started");
    assert.deepEqual(
      calls.map((call) => call.outcome),
      ["timeout"],
    );
    assert.equal(c.healthy(), false);
    await p.hang(false);
    assert.equal((await c.get(signal())).token, "t");
    assert.deepEqual(
      calls.map((call) => call.outcome),
      ["timeout", "ok"],
    );
    assert.equal(c.healthy(), true);
  });

  test("a waiter that gives up stops waiting; close() kills the run and waits until it is reaped", async () => {
    const p = await plugin();
    await p.hang(true);
    const c = credentials(p);
    const giveUp = new AbortController();
    const waiting = c.get(giveUp.signal);
    const shared = c.get(signal()).then(
      () => undefined,
      (err: unknown) => err,
    );
    await until(async () => (await p.childPids()).length > 0, 20_000, "the plugin to hang");
    giveUp.abort(new Error("given up"));
    await assert.rejects(waiting, /given up/);
    const [pid] = await p.pids();
    assert.equal(await processAlive(pid!), true, "the run goes on for the other waiter");
    await c.close();
    assert.equal(await processAlive(pid!), false);
    await untilDead((await p.childPids())[0]!, "the plugin's child");
    assert.equal(((await shared) as Error).name, "AbortError", "the other waiter learns of the shutdown");
    assert.equal((await p.pids()).length, 1, "both waiters shared one run");
  });
});

describe("when a credential is fetched again", () => {
  test("after its expirationTimestamp, and not before", async () => {
    const p = await plugin();
    const expiry = "2031-05-06T07:08:09Z";
    await p.answer({ token: "t", expirationTimestamp: expiry });
    let now = Date.parse(expiry) - 1;
    const c = credentials(p, {}, { now: () => now });
    assert.equal((await c.get(signal())).expiresAt, Date.parse(expiry));
    now = Date.parse(expiry);
    await c.get(signal());
    assert.equal((await p.pids()).length, 1, "valid up to its expiry");
    now += 1;
    await c.get(signal());
    assert.equal((await p.pids()).length, 2, "expired: run again");
  });

  test("after a 401 to it, and only once however many requests were refused with it", async () => {
    const p = await plugin();
    await p.answer({ token: "old" });
    const c = credentials(p);
    const old: ExecCredential = await c.get(signal());
    await p.answer({ token: "new" });
    c.rejected(old);
    assert.equal((await c.get(signal())).token, "new");
    c.rejected(old);
    assert.equal((await c.get(signal())).token, "new");
    assert.equal((await p.pids()).length, 2);
  });
});

describe("RequestAuth", () => {
  test("sends the plugin's token, or its client certificate; a user with a token never runs the plugin", async () => {
    const p = await plugin();
    const { cert, key } = await makeCertificate();
    await p.answer({ clientCertificateData: cert, clientKeyData: key });
    const kc = (user: Record<string, unknown>) => {
      const k = new KubeConfig();
      k.loadFromString(
        JSON.stringify({
          clusters: [{ name: "c", cluster: { server: "https://127.0.0.1:1" } }],
          users: [{ name: "u", user }],
          contexts: [{ name: "x", context: { cluster: "c", user: "u" } }],
          "current-context": "x",
        }),
      );
      return k;
    };
    const withCert = await new RequestAuth(kc(p.user())).forRequest(signal());
    assert.equal((withCert.agent as unknown as { options: { cert: string } }).options.cert, cert);
    assert.equal(withCert.headers.authorization, undefined);
    await p.answer({ token: "from-plugin" });
    const auth = new RequestAuth(kc(p.user()));
    cleanups.push(() => auth.close());
    assert.equal((await auth.forRequest(signal())).headers.authorization, "Bearer from-plugin");
    const runs = (await p.pids()).length;
    const tokenUser = new RequestAuth(kc({ ...p.user(), token: "static" }));
    assert.equal(tokenUser.exec, undefined);
    assert.equal((await tokenUser.forRequest(signal())).headers.authorization, "Bearer static");
    assert.equal((await p.pids()).length, runs, "the plugin did not run for a user with a token");
  });
});
