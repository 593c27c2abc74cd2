/**
 * npm as a user runs it, for the tests of what the packages are: `npm pack` and the commands a new
 * project outside this repository runs.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { join } from "node:path";

/**
 * The environment without the variables an enclosing `npm test` exports (npm_config_local_prefix
 * and the like would point the inner npm at this repository); npm's cache and registry stay.
 */
export const npmEnv: NodeJS.ProcessEnv = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^npm_/i.test(k) || /^npm_config_(cache|registry|userconfig)$/i.test(k),
  ),
);

/** Run a command to its end in `cwd`; its stdout, or an assertion failure showing its stderr. */
export function run(command: string, args: readonly string[], cwd: string): string {
  const r = spawnSync(command, args, { cwd, env: npmEnv, encoding: "utf8", maxBuffer: 64 << 20 });
  assert.equal(r.status, 0, `${command} ${args.join(" ")} in ${cwd}: ${r.error ?? r.stderr}`);
  return r.stdout;
}

/** A tarball `npm pack` wrote, and the paths it holds (relative to the package, sorted). */
export interface Packed {
  tarball: string;
  files: string[];
}

/** `npm pack --json` in `dir` (its lifecycle scripts run), the tarball written to `into`. */
export function npmPack(dir: string, into: string): Packed {
  const out = run("npm", ["pack", "--json", "--pack-destination", into], dir);
  // Lifecycle scripts may print before the JSON document.
  const [packed] = JSON.parse(out.slice(out.indexOf("[\n"))) as {
    filename: string;
    files: { path: string }[];
  }[];
  assert.ok(packed);
  return { tarball: join(into, packed.filename), files: packed.files.map((f) => f.path).sort() };
}
