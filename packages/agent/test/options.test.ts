import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { DEFAULT_NETNS_DIRS, helpText, parseOptions, UsageError } from "../src/options.js";

function run(argv: string[], env: NodeJS.ProcessEnv = {}) {
  const command = parseOptions(argv, env);
  assert.ok("run" in command);
  return command.run;
}

describe("agent options", () => {
  test("defaults", () => {
    assert.deepEqual(run([]), {
      kubeconfig: undefined,
      netnsDirs: undefined,
      discover: true,
      listen: { host: "127.0.0.1", port: 9813 },
      stateDir: "/var/lib/sockdiag-agent",
      protocols: ["udp"],
      onTerminating: "terminate",
      coalesceMs: 1000,
      watchTimeoutMs: 300_000,
      aftercareMs: 30_000,
      maxObjectBytes: 4 * 1024 * 1024,
      maxListBytes: 1024 * 1024 * 1024,
      conntrack: true,
      onePass: "auto",
      dryRun: false,
      events: true,
      nodeName: undefined,
      logLevel: "info",
    });
  });

  test("every flag, and the same through the environment; a flag wins over its variable", () => {
    const flags = run([
      "--kubeconfig=/k",
      "--netns-dir",
      "/a",
      "--netns-dir",
      "/b",
      "--no-discover",
      "--listen",
      "[::1]:9900",
      "--state-dir",
      "/s",
      "--protocols",
      "udp,tcp",
      "--on-terminating",
      "keep",
      "--coalesce",
      "250",
      "--watch-timeout",
      "60",
      "--aftercare",
      "0",
      "--max-object-bytes",
      "512Ki",
      "--max-list-bytes",
      "2Gi",
      "--no-conntrack",
      "--one-pass",
      "off",
      "--dry-run",
      "--no-events",
      "--node-name",
      "node-7.example",
      "--log-level",
      "debug",
    ]);
    const env = run([], {
      SOCKDIAG_AGENT_KUBECONFIG: "/k",
      SOCKDIAG_AGENT_NETNS_DIRS: "/a:/b",
      SOCKDIAG_AGENT_NO_DISCOVER: "true",
      SOCKDIAG_AGENT_LISTEN: "[::1]:9900",
      SOCKDIAG_AGENT_STATE_DIR: "/s",
      SOCKDIAG_AGENT_PROTOCOLS: "udp,tcp",
      SOCKDIAG_AGENT_ON_TERMINATING: "keep",
      SOCKDIAG_AGENT_COALESCE_MS: "250",
      SOCKDIAG_AGENT_WATCH_TIMEOUT: "60",
      SOCKDIAG_AGENT_AFTERCARE: "0",
      SOCKDIAG_AGENT_MAX_OBJECT_BYTES: "524288",
      SOCKDIAG_AGENT_MAX_LIST_BYTES: "2Gi",
      SOCKDIAG_AGENT_NO_CONNTRACK: "1",
      SOCKDIAG_AGENT_ONE_PASS: "off",
      SOCKDIAG_AGENT_DRY_RUN: "yes",
      SOCKDIAG_AGENT_NO_EVENTS: "true",
      SOCKDIAG_AGENT_NODE_NAME: "node-7.example",
      SOCKDIAG_AGENT_LOG_LEVEL: "debug",
    });
    const expected = {
      kubeconfig: "/k",
      netnsDirs: ["/a", "/b"],
      discover: false,
      listen: { host: "::1", port: 9900 },
      stateDir: "/s",
      protocols: ["udp", "tcp"],
      onTerminating: "keep",
      coalesceMs: 250,
      watchTimeoutMs: 60_000,
      aftercareMs: 0,
      maxObjectBytes: 512 * 1024,
      maxListBytes: 2 * 1024 * 1024 * 1024,
      conntrack: false,
      onePass: "off",
      dryRun: true,
      events: false,
      nodeName: "node-7.example",
      logLevel: "debug",
    };
    assert.deepEqual(flags, expected);
    assert.deepEqual(env, expected);
    assert.equal(run(["--coalesce", "5"], { SOCKDIAG_AGENT_COALESCE_MS: "9" }).coalesceMs, 5);
    // Brackets hold either family, so "[$(HOST_IP)]:9813" serves IPv4 and IPv6 nodes.
    assert.deepEqual(run(["--listen", "[10.0.0.7]:9813"]).listen, { host: "10.0.0.7", port: 9813 });
  });

  test("bad values name the flag or the variable they came from", () => {
    const cases: [string[], NodeJS.ProcessEnv, RegExp][] = [
      [["--protocols", "udp,sctp"], {}, /--protocols: unknown protocol "sctp"/],
      [["--on-terminating", "drain"], {}, /--on-terminating: expected terminate, keep/],
      [["--one-pass", "yes"], {}, /--one-pass: expected auto, on, off/],
      [["--coalesce=-1"], {}, /--coalesce: expected milliseconds/],
      [["--listen", "9813"], {}, /--listen: expected HOST:PORT/],
      [[], { SOCKDIAG_AGENT_NODE_NAME: "Node_1" }, /SOCKDIAG_AGENT_NODE_NAME: expected a node's name/],
      [["--listen", "[nope]:1"], {}, /"nope" is not an IP address/],
      [["--watch-timeout", "0"], {}, /--watch-timeout: expected seconds \(1-86400\)/],
      [["--aftercare=-1"], {}, /--aftercare: expected seconds \(0-3600\)/],
      [[], { SOCKDIAG_AGENT_WATCH_TIMEOUT: "5m" }, /SOCKDIAG_AGENT_WATCH_TIMEOUT: expected seconds/],
      [[], { SOCKDIAG_AGENT_COALESCE_MS: "1s" }, /SOCKDIAG_AGENT_COALESCE_MS: expected milliseconds/],
      [[], { SOCKDIAG_AGENT_DRY_RUN: "maybe" }, /SOCKDIAG_AGENT_DRY_RUN: expected true or false/],
      [["--max-object-bytes", "1000"], {}, /--max-object-bytes: expected bytes \(at least 1Ki/],
      [["--max-list-bytes", "1GB"], {}, /--max-list-bytes: expected bytes/],
      [["--frobnicate"], {}, /--frobnicate/],
      [["extra"], {}, /extra/],
    ];
    for (const [argv, env, message] of cases)
      assert.throws(
        () => parseOptions(argv, env),
        (err: Error) => err instanceof UsageError && message.test(err.message),
        argv.join(" "),
      );
  });

  test("--help names every option and its environment variable", () => {
    assert.deepEqual(parseOptions(["--help"]), { help: true });
    const help = helpText();
    for (const flag of [
      "--kubeconfig",
      "--netns-dir",
      "--no-discover",
      "--listen",
      "--state-dir",
      "--protocols",
      "--on-terminating",
      "--coalesce",
      "--max-object-bytes",
      "--max-list-bytes",
      "--no-conntrack",
      "--dry-run",
      "--no-events",
      "--node-name",
      "--log-level",
    ])
      assert.ok(help.includes(flag), flag);
    for (const env of [
      "KUBECONFIG",
      "NETNS_DIRS",
      "NO_DISCOVER",
      "LISTEN",
      "STATE_DIR",
      "PROTOCOLS",
      "ON_TERMINATING",
      "COALESCE_MS",
      "MAX_OBJECT_BYTES",
      "MAX_LIST_BYTES",
      "NO_CONNTRACK",
      "DRY_RUN",
      "NO_EVENTS",
      "NODE_NAME",
      "LOG_LEVEL",
    ])
      assert.ok(help.includes(`SOCKDIAG_AGENT_${env}`), env);
    for (const dir of DEFAULT_NETNS_DIRS) assert.ok(help.includes(dir));
  });
});
