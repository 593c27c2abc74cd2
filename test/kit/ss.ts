/**
 * The `ss` oracle: runs iproute2's ss (inside a pinned namespace through `ip netns exec NAME`) as
 * `ss -H -n -e ARGS...` and parses its rows (ss-parse.ts), so tests can compare sockdiag with ss
 * socket by socket (key: the cookie; for unix rows, which carry none, the inode).
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { type StateName, stateMask, stateName } from "../../src/diag/states.js";
import { parseSs, type SsColumnDefaults, type SsRecord } from "./ss-parse.js";

const run = promisify(execFile);

/** Where and how to run ss. */
export interface SsOptions extends SsColumnDefaults {
  /** Name of a pinned namespace (/run/netns/NAME) to run ss in; default the caller's namespace. */
  netns?: string;
}

/** SsError is an ss run that failed; the message holds the command line and ss's stderr. */
export class SsError extends Error {
  override readonly name = "SsError";
}

/** One protocol flag of ss and the Netid it stands for, for filling in a Netid column ss left out. */
const NETID_FLAGS: ReadonlyArray<[short: string, long: string, netid: string]> = [
  ["t", "--tcp", "tcp"],
  ["u", "--udp", "udp"],
  ["w", "--raw", "raw"],
  ["M", "--mptcp", "mptcp"],
  ["S", "--sctp", "sctp"],
];

/**
 * ss runs `ss -H -n -e ARGS...` and returns its sockets. `args` are ss flags and filter words, as
 * on the command line (["-u", "-a", "dport", "=", "53"]). When ss leaves out the Netid or State
 * column the value is taken from `options`, else inferred from a single protocol flag or a single
 * `state WORD`. Throws SsError when ss fails, SsParseError when a row cannot be read.
 */
export async function ss(args: readonly string[], options: SsOptions = {}): Promise<SsRecord[]> {
  return parseSs(await runSs(["-H", "-n", "-e", ...args], options.netns), columnDefaults(args, options));
}

/**
 * ssKill runs `ss -H -n -e -K ARGS...`, which destroys the matching sockets, and returns the rows ss
 * printed: the sockets it destroyed (ss skips, silently, those the kernel cannot destroy or that are gone).
 */
export async function ssKill(args: readonly string[], options: SsOptions = {}): Promise<SsRecord[]> {
  return ss(["-K", ...args], options);
}

/**
 * runSs runs ss with exactly `args` (in `netns` if given) and returns its stdout. `ip netns exec`
 * mounts a new /sys, hiding the cgroup2 mount under it; `keepMounts` enters only the network
 * namespace (nsenter), so ss can name cgroups.
 */
export async function runSs(args: readonly string[], netns?: string, keepMounts = false): Promise<string> {
  const [cmd, argv] =
    netns === undefined
      ? ["ss", [...args]]
      : keepMounts
        ? ["nsenter", [`--net=/run/netns/${netns}`, "ss", ...args]]
        : ["ip", ["netns", "exec", netns, "ss", ...args]];
  try {
    // ss -e prints "Failed to find cgroup2 mount" on stderr inside `ip netns exec`: only the exit status counts.
    const { stdout } = await run(cmd, argv, { maxBuffer: 1 << 30 });
    return stdout;
  } catch (err) {
    const stderr = (err as { stderr?: string }).stderr?.trim();
    throw new SsError(`${cmd} ${argv.join(" ")} failed: ${stderr || (err as Error).message}`);
  }
}

/** columnDefaults infers the Netid and State of rows from the arguments ss was given. */
export function columnDefaults(args: readonly string[], given: SsColumnDefaults = {}): SsColumnDefaults {
  const out: SsColumnDefaults = { ...given };
  if (out.netid === undefined) {
    const flags = args.filter((a) => /^-[a-zA-Z]+$/.test(a)).join("");
    const netids = NETID_FLAGS.filter(([s, long]) => flags.includes(s) || args.includes(long)).map(
      ([, , n]) => n,
    );
    if (netids.length === 1) out.netid = netids[0];
  }
  if (out.state === undefined) {
    const words = args.filter((_, i) => args[i - 1] === "state" || args[i - 1] === "exclude");
    const single = words.length === 1 && args.includes("state") ? stateOfWord(words[0] ?? "") : undefined;
    if (single) out.state = single;
  }
  return out;
}

/** stateOfWord is the one state an ss state word stands for, or undefined for a group ("connected"). */
function stateOfWord(word: string): StateName | undefined {
  const mask = stateMask(word);
  if (mask === undefined || (mask & (mask - 1)) !== 0) return undefined;
  return stateName(31 - Math.clz32(mask));
}
