/**
 * Shell completion from the command tables, as kubectl does it: `sockdiag completion SHELL` prints
 * a small script for bash, zsh or fish, and the script asks `sockdiag __complete WORD...` at each
 * TAB — the words typed after `sockdiag`, the last one being completed — which answers from the
 * same tables that drive parsing, `--help` and the man page, so every option completes as soon as
 * a table has it. Its answer: a first line saying what to complete (`words`, or `files`/`dirs` for
 * the shell to complete paths), then the candidates, one a line.
 */
import { readdirSync } from "node:fs";
import { NETNS_RUN_DIR } from "../../netns/index.js";
import { COMMANDS } from "../commands/index.js";
import { type CommandSpec, HELP, type OptionSpec } from "../io/index.js";

/** What to complete: candidate words, or paths (the shell completes those itself). */
export type Completion = { kind: "words"; words: string[] } | { kind: "files" } | { kind: "dirs" };

/** What completion needs from outside the tables (a test injects its own). */
export interface CompletionSources {
  /** The command's table, loaded; undefined for an unknown command. */
  spec(name: string): Promise<CommandSpec | undefined>;
  /** The namespaces pinned as ip netns pins them (the names -N takes). */
  pinnedNames(): string[];
}

export const SHELLS = ["bash", "zsh", "fish"] as const;
export type Shell = (typeof SHELLS)[number];

/** The words `sockdiag` itself takes before a command. */
const TOP_FLAGS = ["--help", "--version", "-h", "-V"];

/** The pins in /run/netns (nothing where it cannot be read). */
function pinnedNames(): string[] {
  try {
    return readdirSync(NETNS_RUN_DIR).sort();
  } catch {
    return [];
  }
}

export const DEFAULT_SOURCES: CompletionSources = {
  spec: async (name) => (await COMMANDS.find((c) => c.name === name)?.load())?.spec,
  pinnedNames,
};

const words = (candidates: readonly string[], prefix: string): Completion => ({
  kind: "words",
  words: candidates.filter((w) => w.startsWith(prefix)),
});

/** The option a word names when it takes its value from the next word (`-N`, `--net`, `-uN`). */
function valueOption(spec: CommandSpec, word: string): OptionSpec | undefined {
  if (word.startsWith("--")) {
    if (word.includes("=")) return undefined;
    const o = spec.options.find((x) => x.name === word.slice(2));
    return o?.value ? o : undefined;
  }
  if (!/^-[^-]/.test(word)) return undefined;
  // A cluster of short flags (-uN): only its last letter may take the next word as its value.
  const letters = [...word.slice(1)];
  for (const [i, letter] of letters.entries()) {
    const o = spec.options.find((x) => x.short === letter);
    if (o?.value) return i === letters.length - 1 ? o : undefined;
  }
  return undefined;
}

/** The values an option's value may take, where its table says: pins, paths, or `a|b|c`. */
function completeValue(o: OptionSpec, prefix: string, sources: CompletionSources): Completion {
  if (o.name === "net") return words(sources.pinnedNames(), prefix);
  if (o.value === "DIR") return { kind: "dirs" };
  if (o.value === "FILE" || o.value === "PATH") return { kind: "files" };
  if (/^[a-z0-9-]+(\|[a-z0-9-]+)+$/.test(o.value!)) return words(o.value!.split("|"), prefix);
  return words([], prefix);
}

/** The flags a command takes, long forms first, as the shell lists them. */
function flags(spec: CommandSpec): string[] {
  const options = [...spec.options, HELP];
  return [...options.map((o) => `--${o.name}`), ...options.flatMap((o) => (o.short ? [`-${o.short}`] : []))];
}

/**
 * What completes the last of `typed` (the words after `sockdiag`, the last one being typed, maybe
 * empty). A command's usage that opens with `a|b` names the words its first operand takes
 * (`conntrack ls|rm`, `completion bash|zsh|fish`).
 */
export async function complete(typed: readonly string[], sources = DEFAULT_SOURCES): Promise<Completion> {
  const current = typed.at(-1) ?? "";
  const before = typed.slice(0, -1);
  const names = COMMANDS.map((c) => c.name);
  if (before.length === 0) return words(current.startsWith("-") ? TOP_FLAGS : [...names, "help"], current);
  const [command, ...operands] = before as [string, ...string[]];
  if (command === "help") return words(operands.length === 0 ? names : [], current);
  const spec = await sources.spec(command);
  if (!spec) return words([], current);
  const valueFor = operands.length > 0 ? valueOption(spec, operands.at(-1)!) : undefined;
  if (valueFor) return completeValue(valueFor, current, sources);
  if (current.startsWith("-")) return words(flags(spec), current);
  const given = operands.filter(
    (w, i) => !w.startsWith("-") && !(i > 0 && valueOption(spec, operands[i - 1]!)),
  );
  const choices = /^([a-z0-9-]+(?:\|[a-z0-9-]+)+)(?:\s|$)/.exec(spec.usage)?.[1];
  return words(given.length === 0 && choices ? choices.split("|") : [], current);
}

/** `sockdiag __complete WORD...`: the answer the scripts read. */
export function formatCompletion(c: Completion): string {
  return c.kind === "words" ? `words\n${c.words.map((w) => `${w}\n`).join("")}` : `${c.kind}\n`;
}

const BASH = `# bash completion for sockdiag: source <(sockdiag completion bash)
_sockdiag() {
  local out
  out=$("\${COMP_WORDS[0]}" __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) || return
  case "\${out%%$'\\n'*}" in
  files) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- "\${COMP_WORDS[COMP_CWORD]}") ;;
  dirs) compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -d -- "\${COMP_WORDS[COMP_CWORD]}") ;;
  *) mapfile -t COMPREPLY < <(printf '%s\\n' "$out" | tail -n +2) ;;
  esac
}
complete -F _sockdiag sockdiag
`;

const ZSH = `#compdef sockdiag
# zsh completion for sockdiag: source <(sockdiag completion zsh), after compinit
_sockdiag() {
  local -a out
  out=("\${(@f)$(\${words[1]} __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  case "\${out[1]}" in
  files) _files ;;
  dirs) _files -/ ;;
  *) (( \${#out} > 1 )) && compadd -- "\${(@)out[2,-1]}" ;;
  esac
}
compdef _sockdiag sockdiag
`;

const FISH = `# fish completion for sockdiag: sockdiag completion fish | source
function __sockdiag_complete
    set -l typed (commandline -opc)
    set -l current (commandline -ct)
    set -l out ($typed[1] __complete $typed[2..-1] "$current" 2>/dev/null)
    switch "$out[1]"
        case files
            __fish_complete_path "$current"
        case dirs
            __fish_complete_directories "$current"
        case '*'
            printf '%s\\n' $out[2..-1]
    end
end
complete -c sockdiag -f -a '(__sockdiag_complete)'
`;

/** The script `sockdiag completion SHELL` prints. */
export function completionScript(shell: Shell): string {
  return { bash: BASH, zsh: ZSH, fish: FISH }[shell];
}
