/**
 * Throwaway network namespaces for tests ("scenes"), made and removed with iproute2's `ip netns add/del`
 * (pinned under /run/netns), independent of src/netns/ so the kit can test it. Names are
 * "sdt-<pid>-<counter>[-label]": unique per process, and a leftover's pid tells whether its creator
 * is still running. Namespaces this process created are also removed when it exits.
 */
import { execFile, execFileSync } from "node:child_process";
import { readdir } from "node:fs/promises";
import { promisify } from "node:util";

const run = promisify(execFile);

/** Prefix of every namespace the kit creates. */
export const NETNS_PREFIX = "sdt-";
/** Where `ip netns` pins namespaces. */
export const NETNS_DIR = "/run/netns";
const OWNED = /^sdt-(\d+)-\d+(?:-|$)/;

/** A pinned namespace created by this kit. `remove` is idempotent. */
export interface ScratchNetns {
  /** The `ip netns` name, e.g. "sdt-1234-1". */
  readonly name: string;
  /** The pinned namespace file, for setns: /run/netns/NAME. */
  readonly path: string;
  /** ip runs `ip -n NAME ARGS...` and returns its stdout (e.g. `ip("addr", "add", "10.0.0.1/32", "dev", "lo")`). */
  ip(...args: string[]): Promise<string>;
  /** remove deletes the namespace (`ip netns del`). */
  remove(): Promise<void>;
}

/** NetnsCommandError is an `ip` command that failed; the message holds the command and its stderr. */
export class NetnsCommandError extends Error {
  override readonly name = "NetnsCommandError";
}

let counter = 0;
const created = new Set<string>();
let exitHookInstalled = false;

/** ipCommand runs `ip ARGS...`, returning stdout, or throws NetnsCommandError with ip's stderr. */
export async function ipCommand(...args: string[]): Promise<string> {
  try {
    const { stdout } = await run("ip", args);
    return stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new NetnsCommandError(`ip ${args.join(" ")} failed: ${stderr || (err as Error).message}`);
  }
}

/** netnsName returns a fresh name "sdt-<pid>-<counter>[-label]" (label: letters, digits, "-"). */
export function netnsName(label?: string): string {
  if (label !== undefined && !/^[a-z0-9-]{1,32}$/i.test(label)) {
    throw new Error(`netns label must be 1-32 letters, digits or "-": ${JSON.stringify(label)}`);
  }
  counter++;
  return `${NETNS_PREFIX}${process.pid}-${counter}${label ? `-${label}` : ""}`;
}

/**
 * createNetns adds a pinned namespace with a fresh name and brings its `lo` up. The caller must
 * `remove()` it (or use withNetns); if it does not, it goes when this process exits.
 */
export async function createNetns(label?: string): Promise<ScratchNetns> {
  if (!exitHookInstalled) {
    process.on("exit", removeCreatedSync);
    exitHookInstalled = true;
  }
  const name = netnsName(label);
  await ipCommand("netns", "add", name);
  created.add(name);
  const ns: ScratchNetns = {
    name,
    path: `${NETNS_DIR}/${name}`,
    ip: (...args) => ipCommand("-n", name, ...args),
    remove: () => removeNetns(name),
  };
  try {
    await ns.ip("link", "set", "lo", "up");
  } catch (err) {
    await ns.remove();
    throw err;
  }
  return ns;
}

/** removeNetns deletes the pinned namespace `name`; a name that is already gone is not an error. */
export async function removeNetns(name: string): Promise<void> {
  try {
    await ipCommand("netns", "del", name);
  } catch (err) {
    if (!(await listNetns()).includes(name)) {
      created.delete(name);
      return;
    }
    throw err;
  }
  created.delete(name);
}

/** listNetns returns the names pinned in /run/netns (none when the directory does not exist). */
export async function listNetns(): Promise<string[]> {
  try {
    return await readdir(NETNS_DIR);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === "ENOENT") return [];
    throw err;
  }
}

/**
 * cleanupLeftovers removes the "sdt-<pid>-..." namespaces whose creating process is gone (a crashed
 * earlier run); call it at the start of a test file. Namespaces of live processes, and "sdt-"
 * names not in the kit's form, belong to someone running now and are left alone. Returns the removed names.
 */
export async function cleanupLeftovers(): Promise<string[]> {
  const removed: string[] = [];
  for (const name of await listNetns()) {
    const pid = Number(OWNED.exec(name)?.[1] ?? Number.NaN);
    if (Number.isNaN(pid) || isAlive(pid)) continue;
    await removeNetns(name);
    removed.push(name);
  }
  return removed;
}

/**
 * withNetns creates `count` namespaces, runs `fn` with them and removes them all whatever `fn` did.
 * A removal failure is thrown only when `fn` succeeded (its own error is the more useful one).
 */
export async function withNetns<T>(count: number, fn: (nss: ScratchNetns[]) => Promise<T>): Promise<T> {
  const nss: ScratchNetns[] = [];
  let result: T;
  try {
    for (let i = 0; i < count; i++) nss.push(await createNetns());
    result = await fn(nss);
  } catch (err) {
    await Promise.allSettled(nss.map((ns) => ns.remove()));
    throw err;
  }
  await Promise.all(nss.map((ns) => ns.remove()));
  return result;
}

function isAlive(pid: number): boolean {
  if (pid === process.pid) return true;
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** On exit, remove what this process created and did not remove (best effort: the process is ending). */
function removeCreatedSync(): void {
  for (const name of created) {
    try {
      execFileSync("ip", ["netns", "del", name], { stdio: "ignore" });
    } catch {
      // Nothing more can be done while exiting; cleanupLeftovers will find it next run.
    }
  }
}
