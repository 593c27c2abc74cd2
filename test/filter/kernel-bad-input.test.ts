/**
 * Bad filter input never reaches the kernel: the library throws FilterSyntaxError from
 * iterateSockets() itself, before the first socket is asked for, and the CLI exits 2 with a message
 * that quotes the input and puts a caret line under the offending word — having opened no netlink
 * socket, which strace(1) shows when it is installed.
 */
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { promisify } from "node:util";
import { FilterSyntaxError } from "../../src/filter/index.js";
import { iterateSockets, listSockets } from "../../src/sockets/index.js";
import { CLI_MAIN } from "../cli/cli.js";
import { cleanupLeftovers, createNetns, describeAsRoot, type ScratchNetns } from "../kit/index.js";

const run = promisify(execFile);

/** Bad filters as argv words, and the word each error must point at. */
const BAD: ReadonlyArray<{ what: string; words: string[]; word: string }> = [
  { what: "an unknown word", words: ["sport", "=", ":80", "bogus"], word: "bogus" },
  { what: "a bad IPv4 address", words: ["src", "10.1.0.300"], word: "10.1.0.300" },
  { what: "a bad IPv6 address", words: ["dst", "[fd00::g]:53"], word: "[fd00::g]:53" },
  { what: "a port out of range", words: ["dport", "=", ":70000"], word: ":70000" },
  { what: "a host port out of range", words: ["src", "10.1.0.1:65536"], word: "10.1.0.1:65536" },
  {
    what: "an unclosed parenthesis",
    words: ["(", "sport", "=", ":80", "or", "dport", "=", ":53"],
    word: "(",
  },
  { what: "an unopened parenthesis", words: ["sport", "=", ":80", ")"], word: ")" },
];

/** Where the offending word stands in the input (each test case names a word that occurs once). */
function positionOf(input: string, word: string): number {
  const at = input.indexOf(word);
  assert.ok(at >= 0 && input.indexOf(word, at + 1) < 0, `"${word}" must occur once in "${input}"`);
  return at;
}

function hasStrace(): boolean {
  try {
    execFileSync("strace", ["-V"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

interface Traced {
  code: number;
  stdout: string;
  stderr: string;
  /** The socket/send system calls strace saw, one a line; undefined without strace. */
  syscalls: string | undefined;
}

describeAsRoot("filter: bad input is refused before anything is sent to the kernel", () => {
  let ns: ScratchNetns;
  let dir: string;
  const strace = hasStrace();

  before(async () => {
    await cleanupLeftovers();
    ns = await createNetns("filter-bad");
    dir = mkdtempSync(join(tmpdir(), "sdt-filter-bad-"));
    if (!strace && process.env.CI) throw new Error("strace is needed in CI (.ci/run installs it)");
    if (!strace)
      process.stderr.write("\n*** strace not installed: system calls of the CLI are not checked ***\n\n");
  });

  after(async () => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    await ns?.remove();
  });

  /**
   * cli runs `sockdiag ls -N NAME -t -u -a WORDS...`, under strace (socket and send calls) when it is
   * installed. -a asks for states no counter counts (SYN-RECV, CLOSE), so a valid filter dumps even
   * this empty namespace: a bad filter that got past the checks would show a sendto.
   */
  async function cli(words: readonly string[]): Promise<Traced> {
    const out = join(dir, `trace-${Math.random().toString(36).slice(2)}`);
    const node = [process.execPath, CLI_MAIN, "ls", "-N", ns.name, "-t", "-u", "-a", ...words];
    const argv = strace
      ? ["strace", "-f", "-qq", "-e", "trace=socket,sendto,sendmsg", "-o", out, ...node]
      : node;
    let result: Omit<Traced, "syscalls">;
    try {
      const { stdout, stderr } = await run(argv[0]!, argv.slice(1));
      result = { code: 0, stdout, stderr };
    } catch (err) {
      const e = err as { code?: unknown; stdout?: string; stderr?: string };
      if (typeof e.code !== "number") throw err;
      result = { code: e.code, stdout: e.stdout ?? "", stderr: e.stderr ?? "" };
    }
    return { ...result, syscalls: strace ? readFileSync(out, "utf8") : undefined };
  }

  for (const { what, words, word } of BAD) {
    const input = words.join(" ");

    test(`library: ${what} throws FilterSyntaxError from iterateSockets, naming "${word}"`, () => {
      let error: unknown;
      try {
        // No iteration: the error must come from the call itself.
        iterateSockets({ netns: ns.name, protocols: ["tcp", "udp"], filter: words });
      } catch (err) {
        error = err;
      }
      assert.ok(error instanceof FilterSyntaxError, `expected FilterSyntaxError, got ${String(error)}`);
      assert.equal(error.input, input);
      assert.equal(error.word, word);
      assert.equal(error.position, positionOf(input, word));
      assert.throws(() => listSockets({ netns: ns.name, filter: input }), FilterSyntaxError);
    });

    test(`CLI: ${what} exits 2, quotes the input, points at "${word}", sends nothing`, async () => {
      const r = await cli(words);
      assert.equal(r.code, 2, r.stderr);
      assert.equal(r.stdout, "");
      const lines = r.stderr.split("\n");
      const quoted = lines.indexOf(`  ${input}`);
      assert.ok(quoted > 0, `stderr does not quote "${input}" on a line of its own:\n${r.stderr}`);
      assert.match(lines[0]!, /^sockdiag: /);
      const caret = `  ${" ".repeat(positionOf(input, word))}${"^".repeat(word.length)}`;
      assert.equal(lines[quoted + 1], caret, `no caret line under "${word}":\n${r.stderr}`);
      if (r.syscalls !== undefined) assert.doesNotMatch(r.syscalls, /AF_NETLINK|sendto|sendmsg/);
    });
  }

  test("CLI: a valid filter does open a sock_diag socket (the check above can see one)", async (t) => {
    const r = await cli(["sport", "=", ":80"]);
    assert.equal(r.code, 0, r.stderr);
    if (r.syscalls === undefined) {
      t.skip("strace not installed");
      return;
    }
    assert.match(r.syscalls, /socket\(AF_NETLINK, [^)]*NETLINK_SOCK_DIAG\)/);
    assert.match(r.syscalls, /sendto\(/);
  });
});
