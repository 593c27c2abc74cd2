#!/usr/bin/env node
/**
 * sockdiag: list and destroy sockets through netlink sock_diag, in any network namespace.
 * Dispatches to one command per file; turns errors into messages and exit codes in one place.
 */
import { CONNTRACK, runConntrack } from "./commands/conntrack.js";
import { DOCTOR, runDoctor } from "./commands/doctor.js";
import { KILL, runKill } from "./commands/kill.js";
import { LS, runLs } from "./commands/ls.js";
import { NETNS, runNetns } from "./commands/netns.js";
import { runTerminateBackend, TERMINATE_BACKEND } from "./commands/terminate-backend.js";
import { runWatch, WATCH } from "./commands/watch.js";
import { type CommandSpec, renderHelp } from "./options.js";
import { EXIT_OK, EXIT_USAGE, reportError, UsageError } from "./usage.js";

interface Command {
  spec: CommandSpec;
  run: (argv: readonly string[]) => number | Promise<number>;
}

const COMMANDS: readonly Command[] = [
  { spec: LS, run: runLs },
  { spec: KILL, run: runKill },
  { spec: TERMINATE_BACKEND, run: runTerminateBackend },
  { spec: CONNTRACK, run: runConntrack },
  { spec: WATCH, run: runWatch },
  { spec: NETNS, run: runNetns },
  { spec: DOCTOR, run: runDoctor },
];

function mainHelp(): string {
  const lines = ["Usage: sockdiag COMMAND [OPTIONS]", "", "Commands:"];
  for (const { spec } of COMMANDS) lines.push(`  ${spec.name.padEnd(20)}${spec.summary.split(". ")[0]}`);
  lines.push("", "Run 'sockdiag COMMAND --help' for a command's options.");
  return `${lines.join("\n")}\n`;
}

export function main(argv: readonly string[]): number | Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined) {
    process.stderr.write(mainHelp());
    return EXIT_USAGE;
  }
  if (name === "-h" || name === "--help" || name === "help") {
    process.stdout.write(mainHelp());
    return EXIT_OK;
  }
  const command = COMMANDS.find((c) => c.spec.name === name);
  try {
    if (!command) throw new UsageError(`unknown command "${name}"`, "run 'sockdiag --help' for the list");
    if (rest.includes("-h") || rest.includes("--help")) {
      process.stdout.write(renderHelp(command.spec));
      return EXIT_OK;
    }
    const code = command.run(rest);
    return typeof code === "number" ? code : code.catch(reportError);
  } catch (err) {
    return reportError(err);
  }
}

const code = main(process.argv.slice(2));
if (typeof code === "number") process.exitCode = code;
else
  void code.then((c) => {
    process.exitCode = c;
  });
