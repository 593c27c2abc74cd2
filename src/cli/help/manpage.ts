/**
 * `man sockdiag`: the section-8 page, written in roff from the same command tables as `--help`
 * (each command's usage, summary, options and details), so that the two cannot drift. The build
 * writes it (scripts/man.mjs); package.json's `man` installs it.
 */
import { COMMANDS } from "../commands/index.js";
import { type CommandSpec, EXIT_FAILED, EXIT_OK, EXIT_USAGE, HELP, type OptionSpec } from "../io/index.js";

/**
 * Text as roff prints it: a backslash is `\e`, a hyphen-minus `\-` (an option's dash, which groff
 * would otherwise set as a hyphen), any other character past ASCII `\[uXXXX]`, and a line starting
 * with `.` or `'` is not taken for a request.
 */
function roffText(text: string): string {
  return text
    .replace(/\\/g, "\\e")
    .replace(/-/g, "\\-")
    .replace(/[^\x00-\x7f]/gu, (c) => `\\[u${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, "0")}]`)
    .split("\n")
    .map((line) => (/^[.']/.test(line) ? `\\&${line}` : line))
    .join("\n");
}

/** An option's flags as `--help` writes them (`-f, --family FAMILY`), in bold and italics. */
function roffFlags(o: OptionSpec): string {
  const short = o.short ? `\\fB${roffText(`-${o.short}`)}\\fR, ` : "";
  const value = o.value ? ` \\fI${roffText(o.value)}\\fR` : "";
  return `${short}\\fB${roffText(`--${o.name}`)}\\fR${value}`;
}

function commandSection(spec: CommandSpec): string[] {
  const lines = [
    `.SS "sockdiag ${roffText(spec.name)}"`,
    `\\fBsockdiag ${roffText(spec.name)}\\fR ${roffText(spec.usage)}`,
  ];
  lines.push(".PP", roffText(spec.summary));
  for (const o of [...spec.options, HELP]) lines.push(".TP", roffFlags(o), roffText(o.help));
  if (spec.details) lines.push(".PP", ...detailLines(spec.details));
  return lines;
}

/**
 * A command's details, wrapped by hand for --help, filled to the page's width instead: a line
 * that continues a sentence joins it, and one after a full stop or opening with a label
 * ("FILTER:") starts a line of its own.
 */
function detailLines(details: string): string[] {
  const out: string[] = [];
  let previous = "";
  for (const line of details.split("\n").map((l) => l.trim())) {
    if (out.length > 0 && (previous.endsWith(".") || /^[A-Z][\w ]*:/.test(line))) out.push(".br");
    out.push(roffText(line));
    previous = line;
  }
  return out;
}

/** The whole page, for the commands' loaded specs in the order of `sockdiag --help`. */
export function renderManPage(specs: readonly CommandSpec[], version: string): string {
  const lines = [
    `.TH SOCKDIAG 8 "" "sockdiag ${roffText(version)}" "System Administration"`,
    // Flags and addresses are not words: no hyphenation, ragged right.
    ".nh",
    ".ad l",
    ".SH NAME",
    "sockdiag \\- list and destroy sockets through netlink sock_diag, and conntrack entries, in any network namespace",
    ".SH SYNOPSIS",
    ".B sockdiag",
    ".I COMMAND",
    ".RI [ OPTIONS ]",
    ".br",
    ".B sockdiag help",
    ".I COMMAND",
    ".br",
    ".B sockdiag",
    '.BR \\-\\-help " | " \\-\\-version',
    ".SH DESCRIPTION",
    roffText(
      [
        "sockdiag lists sockets as ss(8) does \u2014 its selection flags, state words and filter language \u2014",
        "and destroys them in batches, in the caller's network namespace, in one named by a pin, a path or a",
        "process, or in every one; it lists and deletes conntrack entries as conntrack(8) does. Its headline",
        "command, terminate-backend, destroys every socket still connected to a removed load-balancer",
        "backend, in the host and in every pod's namespace, and deletes the UDP conntrack entries DNATed to",
        "it. Output is a table as ss or conntrack print it, or JSON (-j, --ndjson).",
      ].join("\n"),
    ),
    ".SH COMMANDS",
    ...specs.flatMap(commandSection),
    ".SH EXIT STATUS",
    ".TP",
    `.B ${EXIT_OK}`,
    "Success.",
    ".TP",
    `.B ${EXIT_FAILED}`,
    roffText("The operation failed: a destroy, a delete or a namespace failed, or the kernel refused."),
    ".TP",
    `.B ${EXIT_USAGE}`,
    roffText(
      "Usage error: a bad flag, filter, address or namespace name; the message names the offending word.",
    ),
    ".TP",
    '.BR 130 ", " 143',
    roffText("kill stopped by SIGINT or SIGTERM, after the batch in flight and its report."),
    ".SH ENVIRONMENT",
    ".TP",
    ".B NODE_DISABLE_COMPILE_CACHE",
    roffText("When set, the CLI keeps no V8 code cache in ~/.cache/sockdiag."),
    ".TP",
    ".B SOCKDIAG_DEBUG",
    roffText("When set, an error is printed with its stack."),
    ".SH FILES",
    ".TP",
    ".I /run/netns",
    roffText("Where ip netns pins namespaces: the default pin directory (--netns-dir names others)."),
    ".TP",
    ".I ~/.cache/sockdiag",
    roffText("The CLI's V8 code cache, kept only where no other user can change it."),
    ".SH SEE ALSO",
    ".BR ss (8),",
    ".BR conntrack (8),",
    ".BR ip\\-netns (8)",
  ];
  return `${lines.join("\n")}\n`;
}

/** Every command's spec, loaded, in the order of `sockdiag --help`. */
export async function commandSpecs(): Promise<CommandSpec[]> {
  return Promise.all(COMMANDS.map(async (c) => (await c.load()).spec));
}
