#!/usr/bin/env node
/**
 * sockdiag: list and destroy sockets through netlink sock_diag, in any network namespace.
 * Dispatches to one command per file, loaded only when run; turns errors into messages and exit
 * codes in one place.
 */
import { COMMANDS, type CommandEntry } from "./commands/index.js";
import { EXIT_OK, EXIT_USAGE, renderHelp, reportError, UsageError, VERSION, writeOut } from "./io/index.js";

function mainHelp(): string {
  const lines = ["Usage: sockdiag COMMAND [OPTIONS]", "", "Commands:"];
  for (const c of COMMANDS) lines.push(`  ${c.name.padEnd(20)}${c.summary}`);
  lines.push(
    "",
    "Run 'sockdiag COMMAND --help' or 'sockdiag help COMMAND' for a command's options;",
    "'sockdiag --version' (-V) for the version.",
  );
  return `${lines.join("\n")}\n`;
}

function find(name: string): CommandEntry {
  const entry = COMMANDS.find((c) => c.name === name);
  if (!entry) throw new UsageError(`unknown command "${name}"`, "run 'sockdiag --help' for the list");
  return entry;
}

export async function main(argv: readonly string[]): Promise<number> {
  const [name, ...rest] = argv;
  try {
    if (name === undefined) {
      process.stderr.write(mainHelp());
      return EXIT_USAGE;
    }
    if (name === "-h" || name === "--help" || (name === "help" && rest.length === 0)) {
      writeOut(mainHelp());
      return EXIT_OK;
    }
    if (name === "-V" || name === "--version") {
      writeOut(`sockdiag ${VERSION}\n`);
      return EXIT_OK;
    }
    // The completion scripts' question at each TAB (not a command: no help, no man page).
    if (name === "__complete") {
      const { complete, formatCompletion } = await import("./help/index.js");
      writeOut(formatCompletion(await complete(rest)));
      return EXIT_OK;
    }
    if (name === "help") {
      if (rest.length > 1) throw new UsageError(`help takes one command, got: ${rest.join(" ")}`);
      writeOut(renderHelp((await find(rest[0]!).load()).spec));
      return EXIT_OK;
    }
    const command = await find(name).load();
    if (rest.includes("-h") || rest.includes("--help")) {
      writeOut(renderHelp(command.spec));
      return EXIT_OK;
    }
    return await command.run(rest);
  } catch (err) {
    return reportError(err);
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
