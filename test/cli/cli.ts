/**
 * Runs the CLI through the package's bin (src/cli/bin.cjs, which loads the built bundle) as a child process, as root or without capabilities,
 * and reads its JSON output. Shared by the CLI integration tests in this folder.
 */
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { startFailure, WITHOUT_CAPABILITIES } from "../kit/unprivileged.js";

const run = promisify(execFile);

/** The installed command: the file package.json names as `bin`. */
export const CLI_MAIN = fileURLToPath(new URL("../../../src/cli/bin.cjs", import.meta.url));

/** What one CLI run did. */
export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Options for one CLI run. */
export interface CliOptions {
  /** Run as root without any capability (see test/kit/unprivileged.ts). */
  unprivileged?: boolean;
  /** Text for the child's stdin. */
  input?: string;
}

/**
 * sockdiag runs `node main.js ARGS...` and resolves with its exit code and output, whatever the
 * exit code (a non-zero exit is a result to check, not an error).
 */
export async function sockdiag(args: readonly string[], options: CliOptions = {}): Promise<CliResult> {
  const argv = [process.execPath, "--enable-source-maps", CLI_MAIN, ...args];
  const [cmd, ...rest] = options.unprivileged ? [...WITHOUT_CAPABILITIES, ...argv] : argv;
  const child = run(cmd as string, rest, { maxBuffer: 1 << 28, env: { ...process.env, SOCKDIAG_DEBUG: "" } });
  if (options.input !== undefined) child.child.stdin?.end(options.input);
  try {
    const { stdout, stderr } = await child;
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof e.code !== "number") throw err;
    const failure = startFailure(e.stderr ?? "");
    if (failure) throw new Error(`the sockdiag child did not start (exit ${e.code}): ${failure}`);
    return { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
  }
}

/** One socket of `ls -j` / `--ndjson`, with the documented fields (inet) or the unix ones. */
export interface JsonSocket {
  netns: string | null;
  family: "inet" | "inet6" | "unix" | "packet" | "netlink";
  protocol: string;
  state: string;
  src?: string;
  sport?: number;
  dst?: string;
  dport?: number;
  ifindex?: number;
  cookie: string;
  inode: number;
  uid: number | null;
  rqueue: number;
  wqueue: number;
  type?: string;
  name?: string | null;
  peer?: number | null;
  owners?: { pid: number; command: string; fd: number }[];
}

/** sockdiagJson runs the CLI with `-j` added, expects exit 0 and returns the parsed array. */
export async function sockdiagJson(args: readonly string[]): Promise<JsonSocket[]> {
  const r = await sockdiag([...args, "-j"]);
  if (r.code !== 0) throw new Error(`sockdiag ${args.join(" ")} -j exited ${r.code}: ${r.stderr}`);
  const parsed: unknown = JSON.parse(r.stdout);
  if (!Array.isArray(parsed)) throw new Error(`sockdiag -j printed no array: ${r.stdout.slice(0, 200)}`);
  return parsed as JsonSocket[];
}
