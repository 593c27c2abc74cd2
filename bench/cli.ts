/**
 * The CLI as whole processes beside ss, on a namespace the list section filled: the ratios of
 * `ls -u -a` and `ls -u -a -j` to `ss -uan`, and where a listing's time goes — Node's own start-up,
 * loading the bundle, a listing whose filter the kernel finds nothing for, and the rest per socket.
 */
import { fmt, recordGoal, row, timeProcessesWithFaults } from "./measure.js";
import { CLI } from "./scene.js";

/** A filter no socket of the scene matches: the kernel still walks every socket, sends none. */
const NOTHING = ["sport", "=", ":1"];

export function cliProcesses(netnsName: string, total: number): string[] {
  const node = process.execPath;
  const runs = timeProcessesWithFaults([
    ["ss", "-N", netnsName, "-uan"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a", "-j"],
    [node, "-e", "0"],
    [node, CLI, "--version"],
    [node, CLI, "--help"],
    [node, CLI, "ls", "-N", netnsName, "-u", "-a", ...NOTHING],
    ["ss", "-N", netnsName, "-uan", ...NOTHING],
  ]);
  const [ss, ls, lsj, start, version, help, empty, ssEmpty] = runs.map((r) => r.ms) as [
    number,
    number,
    number,
    number,
    number,
    number,
    number,
    number,
  ];
  // Page faults of each process (median): start-up's cost is mostly the memory it maps.
  const [ssF, lsF, lsjF, startF] = runs.map((r) => `${r.faults} page faults`);
  recordGoal("ls -u -a / ss -uan, whole processes", ls / ss, 1.1);
  recordGoal("ls -u -a -j / ss -uan, whole processes", lsj / ss, 1.2);
  return [
    "  whole processes, stdout to /dev/null (medians of 7 rounds, one of each per round)",
    row("ss -uan", fmt.ms(ss), `${fmt.rate(total, ss)}; ${ssF}`),
    row("sockdiag ls -u -a", fmt.ms(ls), `${fmt.ratio(ls, ss)} ss (goal <= 1.1); ${lsF}`),
    row("sockdiag ls -u -a -j", fmt.ms(lsj), `${fmt.ratio(lsj, ss)} ss (goal <= 1.2); ${lsjF}`),
    "  where the time of ls -u -a goes",
    row("node -e 0 (Node's own start-up)", fmt.ms(start), startF),
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
