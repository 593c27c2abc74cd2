/**
 * `man sockdiag` says what `--help` says: the page package.json's `man` installs has a section for
 * every command `sockdiag --help` lists, and each section the usage, summary and options (flags
 * and help text, in order) of that command's `--help` — nothing more, nothing less. Both come from
 * the same command tables, so an option added to a table shows in both. `man -l` renders the page
 * without a warning.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import { sockdiag } from "./cli.js";

const ROOT = fileURLToPath(new URL("../../../", import.meta.url));
const manifest = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { man?: string[] };
const PAGE = join(ROOT, manifest.man?.[0] ?? "(no man in package.json)");

/** What a command's --help (or the page's section for it) says: usage, summary, option rows. */
interface CommandHelp {
  usage: string;
  summary: string;
  options: string[];
}

/** The rows of `--help`'s Options table, each "FLAGS | HELP". */
function parseHelp(name: string, text: string): CommandHelp {
  const lines = text.split("\n");
  const usage = lines[0]!.replace(`Usage: sockdiag ${name} `, "");
  const start = lines.indexOf("Options:");
  const options: string[] = [];
  for (const line of lines.slice(start + 1)) {
    if (line === "") break;
    const m = /^ {2} *(\S.*?) {2,}(\S.*)$/.exec(line);
    assert.ok(m, `an option row: ${line}`);
    options.push(`${m[1]!.trim()} | ${m[2]}`);
  }
  return { usage, summary: lines[2]!, options };
}

/** roff text back to plain text: fonts dropped, escapes undone. */
function unroff(text: string): string {
  return text
    .replace(/\\f[BIR]/g, "")
    .replace(/\\\[u([0-9A-F]{4,})\]/g, (_, hex: string) => String.fromCodePoint(Number.parseInt(hex, 16)))
    .replace(/\\-/g, "-")
    .replace(/\\&/g, "")
    .replace(/\\e/g, "\\");
}

/** The page's COMMANDS sections, by command name. */
function parsePage(roff: string): Map<string, CommandHelp> {
  const sections = new Map<string, CommandHelp>();
  const commands = roff.slice(
    roff.indexOf(".SH COMMANDS\n"),
    roff.indexOf("\n.SH ", roff.indexOf(".SH COMMANDS\n")),
  );
  for (const part of commands.split(/^\.SS /m).slice(1)) {
    const lines = part.split("\n");
    const name = unroff(lines[0]!).replace(/^"sockdiag (.*)"$/, "$1");
    const usage = unroff(lines[1]!).replace(`sockdiag ${name} `, "");
    const summary = unroff(lines[lines.indexOf(".PP") + 1]!);
    const options: string[] = [];
    lines.forEach((line, i) => {
      if (line === ".TP") options.push(`${unroff(lines[i + 1]!)} | ${unroff(lines[i + 2]!)}`);
    });
    sections.set(name, { usage, summary, options });
  }
  return sections;
}

test("package.json's man names the page the build wrote", () => {
  assert.ok(manifest.man?.length === 1, "one page in package.json's man");
  assert.match(PAGE, /\/sockdiag\.8$/);
  assert.ok(existsSync(PAGE), PAGE);
  assert.match(readFileSync(PAGE, "utf8"), /^\.TH SOCKDIAG 8 /);
});

test("the page has every command of sockdiag --help, and each says what its --help says", async () => {
  const main = await sockdiag(["--help"]);
  assert.equal(main.code, 0);
  const listed = main.stdout
    .slice(main.stdout.indexOf("Commands:\n"))
    .split("\n")
    .slice(1)
    .flatMap((line) => /^ {2}(\S+)/.exec(line)?.[1] ?? []);
  assert.ok(listed.includes("terminate-backend"), "the command list is parsed");
  const page = parsePage(readFileSync(PAGE, "utf8"));
  assert.deepEqual([...page.keys()], listed);
  for (const name of listed) {
    const help = await sockdiag([name, "--help"]);
    assert.equal(help.code, 0, name);
    const expected = parseHelp(name, help.stdout);
    assert.ok(expected.options.at(-1)?.startsWith("-h, --help | "), `${name}: its options are parsed`);
    assert.deepEqual(page.get(name), expected, name);
  }
});

test("man -l renders the page without a warning", () => {
  const r = spawnSync("man", ["--warnings", "-l", PAGE], {
    encoding: "utf8",
    env: { ...process.env, MANWIDTH: "80", MANPAGER: "cat", PAGER: "cat" },
  });
  assert.equal(r.error, undefined, "man-db's man is installed (.ci/run installs it)");
  assert.equal(r.stderr, "");
  assert.equal(r.status, 0);
  assert.match(r.stdout, /^NAME\n {7}sockdiag - /m);
  assert.match(r.stdout, /^ {3}sockdiag terminate-backend$/m);
  assert.match(r.stdout, /^ {7}-N, --net NAME$/m);
});
