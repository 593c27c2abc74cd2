/**
 * `sockdiag completion bash|zsh|fish`: the bash script, sourced in a real bash, completes a
 * command, an option (`ls --cg` -> `--cgroup`) and the namespaces pinned in /run/netns after `-N`
 * (a tmpfs over /run/netns in a mount namespace of the test's own, holding two pins); and what the
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
import { type CompletionSources, complete, DEFAULT_SOURCES } from "../../src/cli/completion.js";
import { HELP } from "../../src/cli/options.js";
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

describe("the bash script in a real bash", () => {
  let scratch: string;
  before(() => {
    scratch = mkdtempSync(join(tmpdir(), "sockdiag-completion-"));
    // `sockdiag` on PATH, as an install puts it there: the script calls it back at each TAB.
    writeFileSync(join(scratch, "sockdiag"), `#!/bin/sh\nexec "${process.execPath}" "${CLI_MAIN}" "$@"\n`);
    chmodSync(join(scratch, "sockdiag"), 0o755);
  });
  after(() => rmSync(scratch, { recursive: true, force: true }));

  test("completes a command, an option and a pinned namespace after -N", (t) => {
    if (!requireRoot(t)) return;
    const driver = [
      "source <(sockdiag completion bash)",
      "complete -p sockdiag",
      // What bash sets before calling the function at a TAB after the words given.
      // biome-ignore lint/suspicious/noTemplateCurlyInString: bash's ${...}, not JavaScript's
      'comp() { COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}; COMPREPLY=(); _sockdiag; echo "[${COMPREPLY[*]}]"; }',
      "comp sockdiag term",
      "comp sockdiag ls --cg",
      'comp sockdiag ls -u -N ""',
      "comp sockdiag kill -N sdt-compl-b",
    ].join("\n");
    writeFileSync(join(scratch, "driver.bash"), driver);
    const setup = [
      "mount -t tmpfs sdt-completion /run/netns",
      "ip netns add sdt-compl-a",
      "ip netns add sdt-compl-b",
      `exec bash --norc --noprofile ${join(scratch, "driver.bash")}`,
    ].join(" && ");
    const r = spawnSync("unshare", ["--mount", "--net", "--propagation", "private", "sh", "-c", setup], {
      encoding: "utf8",
      env: { ...process.env, PATH: `${scratch}:${process.env.PATH}` },
      timeout: 60_000,
    });
    assert.equal(r.error, undefined);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(r.stdout.trim().split("\n"), [
      "complete -F _sockdiag sockdiag",
      "[terminate-backend]",
      "[--cgroup]",
      "[sdt-compl-a sdt-compl-b]",
      "[sdt-compl-b]",
    ]);
  });
});
