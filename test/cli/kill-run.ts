/**
 * Running the built CLI (dist/src/cli/main.js) as a child process for the `kill` and `doctor`
 * tests, as root or without privileges (setpriv, runuser or capsh, whichever this machine has).
 */
import { spawn } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { fileURLToPath } from "node:url";

/** The compiled CLI entry point (this file runs as dist/test/cli/kill-run.js). */
export const CLI_MAIN = fileURLToPath(new URL("../../src/cli/main.js", import.meta.url));

/** What a CLI run printed and how it exited. */
export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Options for runCli. */
export interface CliOptions {
  /** Run without CAP_NET_ADMIN (and as user nobody where the tool allows): see unprivilegedPrefix. */
  unprivileged?: boolean;
}

/**
 * runCli runs `sockdiag ARGS...` and resolves with its output and exit code (never rejects for a
 * non-zero exit). Throws when `unprivileged` is asked for and no tool on this machine can drop privileges.
 */
export function runCli(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const nodeArgs = ["--enable-source-maps", CLI_MAIN, ...args];
  const argv = options.unprivileged
    ? unprivilegedCommand(nodeArgs)
    : [process.execPath, ...nodeArgs];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0] as string, argv.slice(1), { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (d: string) => {
      stdout += d;
    });
    child.stderr.setEncoding("utf8").on("data", (d: string) => {
      stderr += d;
    });
    child.once("error", reject);
    child.once("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Parse a run's stdout as JSON, failing with the whole output when it is not. */
export function parseJson<T>(result: CliResult): T {
  try {
    return JSON.parse(result.stdout) as T;
  } catch (err) {
    throw new Error(
      `stdout is not JSON (${(err as Error).message}); exit ${result.code}\nstdout: ${result.stdout}\nstderr: ${result.stderr}`,
    );
  }
}

/**
 * unprivilegedCommand is the argv that runs `node NODE_ARGS...` without CAP_NET_ADMIN: setpriv as
 * nobody with no capabilities, else runuser as nobody, else capsh dropping CAP_NET_ADMIN from the
 * bounding set (still uid 0: root's capabilities are recomputed without it at exec). Throws when
 * none of these tools is installed.
 */
export function unprivilegedCommand(nodeArgs: readonly string[]): string[] {
  const node = process.execPath;
  const setpriv = onPath("setpriv");
  if (setpriv)
    return [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", node, ...nodeArgs];
  const runuser = onPath("runuser");
  if (runuser) return [runuser, "-u", "nobody", "--", node, ...nodeArgs];
  const capsh = onPath("capsh");
  if (capsh) return [capsh, "--drop=cap_net_admin", `--shell=${node}`, "--", ...nodeArgs];
  throw new Error("none of setpriv, runuser, capsh is installed: cannot drop privileges");
}

function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "/usr/sbin:/usr/bin:/sbin:/bin").split(":")) {
    const file = `${dir}/${name}`;
    try {
      accessSync(file, constants.X_OK);
      return file;
    } catch {
      // Not in this directory.
    }
  }
  return undefined;
}
