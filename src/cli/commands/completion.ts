/** `sockdiag completion bash|zsh|fish`: the shell's completion script, as kubectl prints its own. */

import { completionScript, SHELLS, type Shell } from "../help/index.js";
import { type CommandSpec, EXIT_OK, parseCommand, UsageError, writeOut } from "../io/index.js";
import type { Command } from "./index.js";

export const COMPLETION: CommandSpec = {
  name: "completion",
  usage: SHELLS.join("|"),
  summary:
    "Print the shell completion script for bash, zsh or fish. It completes commands, options and their values (pinned namespace names after -N) from the same tables as --help.",
  options: [],
  details: [
    "bash:  source <(sockdiag completion bash)        (in ~/.bashrc, or the output in /etc/bash_completion.d/sockdiag)",
    "zsh:   source <(sockdiag completion zsh)         (in ~/.zshrc, after compinit)",
    "fish:  sockdiag completion fish | source         (or the output in ~/.config/fish/completions/sockdiag.fish)",
  ].join("\n"),
};

function runCompletion(argv: readonly string[]): number {
  const { positionals } = parseCommand(COMPLETION, argv);
  const [shell, ...rest] = positionals;
  if (shell === undefined || rest.length > 0 || !(SHELLS as readonly string[]).includes(shell))
    throw new UsageError(
      `completion takes one shell, ${SHELLS.join(", ")}${shell === undefined ? "" : `, not: ${positionals.join(" ")}`}`,
    );
  writeOut(completionScript(shell as Shell));
  return EXIT_OK;
}

export const command: Command = { spec: COMPLETION, run: runCompletion };
