/**
 * TestPlugin: a real exec credential plugin (a shell script) for the agent's tests, steered
 * through files beside it: what it answers, whether it hangs (then it starts a `sleep` child and
 * waits, so a kill must reach its whole process group), and what it saw (its pids, its children's
 * pids, KUBERNETES_EXEC_INFO, one variable of its environment, its stdin).
 */
import { chmod, readFile, rename, rm, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { until } from "./waits.js";

const SCRIPT = `#!/bin/sh
dir=$(dirname "$0")
echo $$ >> "$dir/pids"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$dir/exec-info"
printf '%s' "$PLUGIN_PROBE" > "$dir/probe"
readlink /proc/self/fd/0 > "$dir/stdin"
if [ -e "$dir/hang" ]; then
  sleep 1000 &
  echo $! >> "$dir/child-pids"
  wait
fi
if [ -e "$dir/fail" ]; then
  echo "no credentials for you" >&2
  exit 3
fi
cat "$dir/answer"
`;

export const EXEC_V1 = "client.authentication.k8s.io/v1";

export class TestPlugin {
  readonly command: string;

  private constructor(readonly dir: string) {
    this.command = join(dir, "plugin.sh");
  }

  /** Write the plugin into `dir` (a directory only root can change), answering nothing yet. */
  static async create(dir: string): Promise<TestPlugin> {
    const plugin = new TestPlugin(dir);
    await writeFile(plugin.command, SCRIPT, { mode: 0o700 });
    await chmod(plugin.command, 0o700);
    return plugin;
  }

  /** The kubeconfig user section that runs this plugin (v1, interactiveMode Never unless overridden). */
  user(exec: Record<string, unknown> = {}): Record<string, unknown> {
    return { exec: { apiVersion: EXEC_V1, command: this.command, interactiveMode: "Never", ...exec } };
  }

  /** Answer this ExecCredential `status` (as given, any shape) under `apiVersion`. */
  async answer(status: unknown, apiVersion = EXEC_V1): Promise<void> {
    await this.answerRaw(JSON.stringify({ apiVersion, kind: "ExecCredential", status }));
  }

  /** Answer exactly `text` on stdout. */
  async answerRaw(text: string): Promise<void> {
    // Renamed into place: a run reading it meanwhile sees the old answer or the new, whole.
    await writeFile(join(this.dir, "answer.tmp"), text);
    await rename(join(this.dir, "answer.tmp"), join(this.dir, "answer"));
  }

  /** While on, each run hangs (with a child) until killed. */
  async hang(on: boolean): Promise<void> {
    await this.flag("hang", on);
  }

  /** While on, each run writes to stderr and exits with status 3. */
  async fail(on: boolean): Promise<void> {
    await this.flag("fail", on);
  }

  /** The pid of every run so far. */
  async pids(): Promise<number[]> {
    return numbers(join(this.dir, "pids"));
  }

  /** The pid of every child a hanging run started. */
  async childPids(): Promise<number[]> {
    return numbers(join(this.dir, "child-pids"));
  }

  /** What the last run saw: KUBERNETES_EXEC_INFO parsed, PLUGIN_PROBE, and where its stdin led. */
  async seen(): Promise<{ execInfo: unknown; probe: string; stdin: string }> {
    const read = (name: string) => readFile(join(this.dir, name), "utf8");
    return {
      execInfo: JSON.parse(await read("exec-info")),
      probe: await read("probe"),
      stdin: (await read("stdin")).trim(),
    };
  }

  private async flag(name: string, on: boolean): Promise<void> {
    if (on) await writeFile(join(this.dir, name), "");
    else await rm(join(this.dir, name), { force: true });
  }
}

async function numbers(path: string): Promise<number[]> {
  const text = await readFile(path, "utf8").catch(() => "");
  return text.split("\n").filter(Boolean).map(Number);
}

/** True while `pid` is a process that has not exited (a zombie has). */
export async function processAlive(pid: number): Promise<boolean> {
  const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => undefined);
  if (stat === undefined) return false;
  // The state follows the command name in parentheses, which may itself hold ") ".
  const state = stat.slice(stat.lastIndexOf(")") + 2, stat.lastIndexOf(")") + 3);
  return state !== "Z" && state !== "X";
}

/**
 * Resolves once `pid` has died. For a process the caller does not reap (a plugin's child): one sent
 * SIGKILL may still be on its way out for a moment after its killer returned.
 */
export async function untilDead(pid: number, what: string): Promise<void> {
  await until(async () => !(await processAlive(pid)), 5000, `${what} (pid ${pid}) to die`);
}
