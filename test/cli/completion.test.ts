/**
 * `sockdiag completion bash|zsh|fish`: each script, loaded in its real shell, completes a command,
 * an option (`ls --cg` -> `--cgroup`) and the namespaces pinned in /run/netns after `-N` (a tmpfs
 * over /run/netns in a mount namespace of the test's own, holding two pins); and what the
 * scripts ask (`sockdiag __complete`) answers from the command tables, so that every option of
 * every table completes.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { COMMANDS } from "../../src/cli/commands/index.js";
import { type CompletionSources, complete, DEFAULT_SOURCES } from "../../src/cli/help/index.js";
import { HELP } from "../../src/cli/io/index.js";
import { requireRoot } from "../kit/root.js";
import { CLI_MAIN, sockdiag } from "./cli.js";

/** The tables as the CLI loads them, with the pins a test names. */
const sources = (pins: string[]): CompletionSources => ({
  spec: DEFAULT_SOURCES.spec,
  pinnedNames: () => pins,
});
const words = async (typed: string[], pins: string[] = []) => {
  const c = await complete(typed, sources(pins));
  return c.kind === "words" ? c.words : c.kind;
};

test("every option of every command's table completes from a prefix of its long name", async () => {
  let checked = 0;
  for (const entry of COMMANDS) {
    const { spec } = await entry.load();
    for (const o of [...spec.options, HELP]) {
      const long = `--${o.name}`;
      assert.ok((await words([entry.name, long.slice(0, 3)])).includes(long), `${entry.name} ${long}`);
      if (o.short)
        assert.ok((await words([entry.name, "-"])).includes(`-${o.short}`), `${entry.name} -${o.short}`);
      checked++;
    }
  }
  assert.ok(checked > 50, `${checked} options`);
});

test("commands, an option, operand words, a value's choices, pins after -N, paths", async () => {
  assert.deepEqual(await words(["te"]), ["terminate-backend"]);
  assert.deepEqual(await words(["help", "co"]), ["conntrack", "completion"]);
  assert.deepEqual(await words(["ls", "--cg"]), ["--cgroup"]);
  assert.deepEqual(await words(["conntrack", ""]), ["ls", "rm"]);
  assert.deepEqual(await words(["conntrack", "ls", ""]), []);
  assert.deepEqual(await words(["completion", ""]), ["bash", "zsh", "fish"]);
  assert.deepEqual(await words(["terminate-backend", "--protocol", ""]), ["udp", "tcp", "any"]);
  assert.deepEqual(await words(["ls", "-u", "-N", "p"], ["pod-a", "pod-b", "web"]), ["pod-a", "pod-b"]);
  assert.deepEqual(await words(["ls", "-uN", ""], ["pod-a"]), ["pod-a"]);
  assert.deepEqual(await words(["ls", "--net", ""], ["pod-a"]), ["pod-a"]);
  assert.equal(await words(["ls", "-F", ""]), "files");
  assert.equal(await words(["ls", "--all-netns", "--netns-dir", "/r"]), "dirs");
  assert.deepEqual(await words(["no-such-command", "--"]), []);
});

test("sockdiag __complete prints what to complete, then the candidates", async () => {
  const r = await sockdiag(["__complete", "ls", "--cg"]);
  assert.equal(r.code, 0);
  assert.equal(r.stdout, "words\n--cgroup\n");
  const files = await sockdiag(["__complete", "ls", "-F", ""]);
  assert.equal(files.stdout, "files\n");
});

test("completion refuses a shell it has no script for", async () => {
  const r = await sockdiag(["completion", "tcsh"]);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /bash, zsh, fish/);
});

/** What each shell prints for the four completions, one bracketed list a line. */
const EXPECTED = ["[terminate-backend]", "[--cgroup]", "[sdt-compl-a sdt-compl-b]", "[sdt-compl-b]"];

/** Drivers that load a shell's script and complete `term`, `ls --cg`, `ls -u -N ` and `kill -N sdt-compl-b`. */
const DRIVERS: Record<string, { argv: (file: string) => string[]; script: string }> = {
  bash: {
    argv: (file) => ["bash", "--norc", "--noprofile", file],
    script: [
      "source <(sockdiag completion bash)",
      "complete -p sockdiag",
      // What bash sets before calling the function at a TAB after the words given.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's ${...}, not JavaScript's
      'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _sockdiag; echo "[${COMPREPLY[*]}]"; }',
      "comp sockdiag term",
      "comp sockdiag ls --cg",
      'comp sockdiag ls -u -N ""',
      "comp sockdiag kill -N sdt-compl-b",
    ].join("\n"),
  },
  // zsh's compadd works only inside a completion widget: stand-ins print what it was given, and the
  // function runs with the words and CURRENT a TAB would set.
  zsh: {
    argv: (file) => ["zsh", "-f", file],
    script: [
      "autoload -U compinit && compinit -u -D",
      "source <(sockdiag completion zsh)",
      // biome-ignore lint/suspicious/noTemplateCurlyInString: zsh's ${...}, not JavaScript's
      "print -r -- complete ${_comps[sockdiag]} sockdiag",
      'compadd() { [[ $1 == -- ]] && shift; print -r -- "[$*]"; }',
      'comp() { words=("$@"); CURRENT=$#; _sockdiag; }',
      "comp sockdiag term",
      "comp sockdiag ls --cg",
      "comp sockdiag ls -u -N ''",
      "comp sockdiag kill -N sdt-compl-b",
    ].join("\n"),
  },
  fish: {
    argv: (file) => ["fish", "--no-config", file],
    script: [
      "sockdiag completion fish | source",
      "echo complete (complete -c sockdiag | string match -q '*__sockdiag_complete*'; and echo __sockdiag_complete) sockdiag",
      'function comp; echo "["(complete -C "$argv" | string join " ")"]"; end',
      "comp 'sockdiag term'",
      "comp 'sockdiag ls --cg'",
      "comp 'sockdiag ls -u -N '",
      "comp 'sockdiag kill -N sdt-compl-b'",
    ].join("\n"),
  },
};

describe("each script in its real shell, with two namespaces pinned", () => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "sockdiag-completion-"));
    // `sockdiag` on PATH, as an install puts it there: the script calls it back at each TAB.
    writeFileSync(join(scratch, "sockdiag"), `#!/bin/sh\nexec "${process.execPath}" "${CLI_MAIN}" "$@"\n`);
    chmodSync(join(scratch, "sockdiag"), 0o755);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  for (const [shell, driver] of Object.entries(DRIVERS)) {
    test(`${shell} completes a command, an option and a pinned namespace after -N`, (t) => {
      if (!requireRoot(t)) return;
      const file = join(scratch, `driver.${shell}`);
      writeFileSync(file, `${driver.script}\n`);
      // A tmpfs over /run/netns in a mount namespace of the test's own holds the two pins.
      const setup = [
        "mount -t tmpfs sdt-completion /run/netns",
        "ip netns add sdt-compl-a",
        "ip netns add sdt-compl-b",
        'exec "$@"',
      ].join(" && ");
      const r = spawnSync(
        "unshare",
        ["--mount", "--net", "--propagation", "private", "sh", "-c", setup, "sh", ...driver.argv(file)],
        {
          encoding: "utf8",
          env: { ...process.env, PATH: `${scratch}:${process.env.PATH}` },
          timeout: 60_000,
        },
      );
      assert.equal(r.error, undefined);
      assert.equal(r.status, 0, r.stderr);
      const [registered, ...completions] = r.stdout.trim().split("\n");
      assert.match(registered!, /^complete .*_sockdiag.* sockdiag$/);
      assert.deepEqual(completions, EXPECTED);
    });
  }
});
