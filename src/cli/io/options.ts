/**
 * Options as data: each command declares its flags once in a table that drives parsing (through
 * node:util parseArgs), `--help` and the typed values the command reads.
 */
import { parseArgs } from "node:util";
import { nearest } from "../../options/index.js";
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
  /** An ss option sockdiag refuses: why, for the usage error that giving it is. */
  refused?: () => string;
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
    const near = nearestOption(spec, err);
    throw new UsageError(
      `${spec.name}: ${cleanParseMessage(err)}${near ? `; did you mean ${near}?` : ""}`,
      `run 'sockdiag ${spec.name} --help'`,
    );
  }
  for (const token of parsed.tokens) {
    const o = token.kind === "option" ? spec.options.find((x) => x.name === token.name) : undefined;
    if (o?.refused) throw new UsageError(`${o.short ? `-${o.short}/` : ""}--${o.name}: ${o.refused()}`);
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

/**
 * The known option nearest to the unknown one `err` names: a long one by edit distance; a single
 * letter only in its other case (every letter is one edit from every other, so nothing nearer).
 */
function nearestOption(spec: CommandSpec, err: unknown): string | undefined {
  if ((err as NodeJS.ErrnoException).code !== "ERR_PARSE_ARGS_UNKNOWN_OPTION") return undefined;
  const given = /'(-[^']*)'/.exec((err as Error).message)?.[1];
  if (given === undefined) return undefined;
  const options = [...spec.options, HELP];
  if (given.startsWith("--")) {
    const name = nearest(
      given.slice(2).split("=")[0]!,
      options.map((o) => o.name),
    );
    return name === undefined ? undefined : `--${name}`;
  }
  const letter = given.slice(1);
  const other = letter === letter.toLowerCase() ? letter.toUpperCase() : letter.toLowerCase();
  const o = options.find((x) => x.short === other);
  return o ? `-${o.short}/--${o.name}` : undefined;
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
