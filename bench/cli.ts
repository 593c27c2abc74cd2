/**
 * The CLI as whole processes beside ss, on a namespace the list section filled: the ratios of
 * `ls -u -a` and `ls -u -a -j` to `ss -uan`, and where a listing's time goes — Node's own start-up,
 * loading the bundle, a listing of an empty namespace (the start-up cost, with its goal), a listing
 * whose filter the kernel finds nothing for, and the rest per socket.
 */
import { spawnSync } from "node:child_process";
import { fmt, recordGoal, row, TIMED_ENV, timeProcessesWithFaults } from "./measure.js";
import { CLI } from "./scene.js";

/**
 * Milliseconds of collection pauses in one (untimed) run of `node args`, from --trace-gc's lines
 * ("Scavenge 5.3 (5.4) -> 4.8 (6.4) MB, [pooled: 0 MB,] 1.85 / 0.01 ms ..."), and how many there were.
 */
function collectionsOf(args: readonly string[]): { ms: number; count: number } {
  const r = spawnSync(process.execPath, ["--trace-gc", ...args], {
    encoding: "utf8",
    env: TIMED_ENV,
    maxBuffer: 1 << 30,
  });
  let ms = 0;
  let count = 0;
  for (const m of r.stdout.matchAll(/^\[\d+:0x[0-9a-f]+\].*?, ([\d.]+) \/ [\d.]+ ms/gm)) {
    ms += Number(m[1]);
    count++;
  }
  return { ms, count };
}

/** A filter no socket of the scene matches: the kernel still walks every socket, sends none. */
const NOTHING = ["sport", "=", ":1"];

export function cliProcesses(netnsName: string, total: number, emptyNetns: string): string[] {
  const node = process.execPath;
  const runs = timeProcessesWithFaults([
    [node, CLI, "ls", "-N", emptyNetns],
    [node, CLI, "ls", "-N", emptyNetns, "-u", "-a"],
    ["ss", "-N", netnsName, "-uan"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a", "-j"],
    [node, "-e", "0"],
    [node, CLI, "--version"],
    [node, CLI, "--help"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a", ...NOTHING],
    ["ss", "-N", netnsName, "-uan", ...NOTHING],
  ]);
  const [lsEmptyNs, lsuEmptyNs, ss, ls, lsj, start, version, help, empty, ssEmpty] = runs.map(
    (r) => r.ms,
  ) as [number, number, number, number, number, number, number, number, number, number];
  // Page faults of each process (median): start-up's cost is mostly the memory it maps.
  const [emptyNsF, emptyNsUF, ssF, lsF, lsjF, startF] = runs.map((r) => `${r.faults} page faults`);
  const gc = (args: readonly string[]) => {
    const c = collectionsOf(args);
    return `collections ${fmt.ms(c.ms)} (${c.count})`;
  };
  recordGoal("start-up: ls of an empty namespace - node -e 0", lsEmptyNs - start, 30, "ms");
  recordGoal("ls -u -a / ss -uan, whole processes", ls / ss, 1.1);
  recordGoal("ls -u -a -j / ss -uan, whole processes", lsj / ss, 1.2);
  return [
    "  whole processes, stdout to /dev/null (medians of 7 rounds, one of each per round); collections:",
    "  one untimed run with --trace-gc",
    row("node -e 0 (Node's own start-up)", fmt.ms(start), `${startF}; ${gc(["-e", "0"])}`),
    row(
      "start-up: sockdiag ls in an empty namespace",
      fmt.ms(lsEmptyNs),
      `node -e 0 + ${fmt.ms(lsEmptyNs - start)} (goal <= 30 ms); ${emptyNsF}; ${gc([CLI, "ls", "-N", emptyNetns])}`,
    ),
    row(
      "sockdiag ls -u -a in an empty namespace",
      fmt.ms(lsuEmptyNs),
      `node -e 0 + ${fmt.ms(lsuEmptyNs - start)}; ${emptyNsUF}`,
    ),
    row("ss -uan", fmt.ms(ss), `${fmt.rate(total, ss)}; ${ssF}`),
    row(
      "sockdiag ls -u -a",
      fmt.ms(ls),
      `${fmt.ratio(ls, ss)} ss (goal <= 1.1); ${lsF}; ${gc([CLI, "ls", "-N", netnsName, "-u", "-a"])}`,
    ),
    row("sockdiag ls -u -a -j", fmt.ms(lsj), `${fmt.ratio(lsj, ss)} ss (goal <= 1.2); ${lsjF}`),
    "  where the time of ls -u -a goes (node -e 0 above)",
    row(
      "sockdiag --version (+ loading the bundle)",
      fmt.ms(version),
      `node -e 0 + ${fmt.ms(version - start)}`,
    ),
    row("sockdiag --help (+ every command's summary)", fmt.ms(help), `node -e 0 + ${fmt.ms(help - start)}`),
    row(
      `ls -u -a ${NOTHING.join(" ")} (+ koffi; the kernel walks all, sends none)`,
      fmt.ms(empty),
      `--version + ${fmt.ms(empty - version)}; ss -uan ${NOTHING.join(" ")}: ${fmt.ms(ssEmpty)}`,
    ),
    row(
      `ls -u -a: the ${total.toLocaleString("en-US")} sockets themselves`,
      fmt.ms(ls - empty),
      `${fmt.perItem(ls - empty, total)} a socket (kernel, decoding, table, write)`,
    ),
  ];
}
