/**
 * Options as data: each command declares its flags once in a table that drives parsing (through
 * node:util parseArgs), `--help` and the typed values the command reads.
 */
import { parseArgs } from "node:util";
import { UsageError } from "./usage.js";

export interface OptionSpec {
  /** Long name without dashes, e.g. "tcp". */
  name: string;
  /** Single-letter short form, e.g. "t". */
  short?: string;
  /** A value-taking option names its value here ("NAME"); boolean otherwise. */
  value?: string;
  /** May be given more than once (values collected in order). */
  multiple?: boolean;
  /** One line for --help. */
  help: string;
}

export interface CommandSpec {
  name: string;
  /** Usage line after "sockdiag NAME", e.g. "[SELECT] [FILTER]". */
  usage: string;
  summary: string;
  options: readonly OptionSpec[];
  /** Extra help text printed after the options. */
  details?: string;
}

export type ParsedValues = Record<string, string | boolean | string[] | undefined>;

export interface Parsed {
  values: ParsedValues;
  positionals: string[];
  /** The long names of the options given, in the order given (where the last one wins, as -a/-l). */
  order: string[];
}

/** The --help option every command has. */
export const HELP: OptionSpec = { name: "help", short: "h", help: "show this help" };

/** Parse argv for `spec`; an unknown flag or a missing value becomes a UsageError naming the flag. */
export function parseCommand(spec: CommandSpec, argv: readonly string[]): Parsed {
  const options: Record<string, { type: "string" | "boolean"; short?: string; multiple?: boolean }> = {};
  for (const o of [...spec.options, HELP]) {
    options[o.name] = {
      type: o.value ? "string" : "boolean",
      ...(o.short ? { short: o.short } : {}),
      ...(o.multiple ? { multiple: true } : {}),
    };
  }
  let parsed: ReturnType<typeof parseArgs<{ options: typeof options; tokens: true; allowPositionals: true }>>;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true, tokens: true });
  } catch (err) {
    throw new UsageError(`${spec.name}: ${cleanParseMessage(err)}`, `run 'sockdiag ${spec.name} --help'`);
  }
  // parseArgs keeps the last of a repeated value: a second -N NAME would silently win.
  const seen = new Set<string>();
  for (const token of parsed.tokens) {
    if (token.kind !== "option" || token.value === undefined) continue;
    const o = spec.options.find((x) => x.name === token.name);
    if (!o || o.multiple) continue;
    if (seen.has(o.name)) {
      const flag = `${o.short ? `-${o.short}/` : ""}--${o.name}`;
      const every = o.name === "net" ? "; for every namespace, use --all-netns" : "";
      throw new UsageError(
        `${spec.name}: ${flag} given more than once`,
        `${flag} takes one ${o.value}${every}`,
      );
    }
    seen.add(o.name);
  }
  const order = parsed.tokens.flatMap((t) => (t.kind === "option" ? [t.name] : []));
  return { values: parsed.values as ParsedValues, positionals: parsed.positionals, order };
}

// parseArgs messages explain the option in terms of JavaScript ("To specify a positional argument
// starting with a '-' place it at the end of the command after '--'..."); keep the first sentence.
function cleanParseMessage(err: unknown): string {
  const message = err instanceof Error ? err.message : String(err);
  return message.split(". ")[0]!.replace(/^Unknown option/, "unknown option");
}

/** The --help text of a command, generated from its table. */
export function renderHelp(spec: CommandSpec): string {
  const rows = [...spec.options, HELP].map((o) => {
    const flags = `${o.short ? `-${o.short}, ` : "    "}--${o.name}${o.value ? ` ${o.value}` : ""}`;
    return [flags, o.help] as const;
  });
  const width = Math.max(...rows.map(([f]) => f.length)) + 2;
  const lines = [`Usage: sockdiag ${spec.name} ${spec.usage}`, "", spec.summary, "", "Options:"];
  for (const [flags, help] of rows) lines.push(`  ${flags.padEnd(width)}${help}`);
  if (spec.details) lines.push("", spec.details);
  return `${lines.join("\n")}\n`;
}
