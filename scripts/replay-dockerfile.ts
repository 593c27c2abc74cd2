/**
 * `npm run replay:dockerfile`: deploy/Dockerfile proved without a Docker engine. On a clean clone of
 * this repository's HEAD (a temporary directory) it
 * 1. replays every stage but the last: each stage's filesystem is a directory of its own, WORKDIR a
 *    folder in it, COPY from the build context honours deploy/Dockerfile.dockerignore, and RUN runs
 *    with `sh -c` on the Node.js and npm on PATH (CI runs this on Node 20 and 24), with npm's cache
 *    preferred;
 * 2. lays out the last stage: only what its COPY lines copy, from the earlier stages' directories;
 * 3. runs its ENTRYPOINT from that layout: `--help`, then the agent against the test kit's stand-in
 *    API server (this checkout's build of packages/agent/test/kit), in dry-run mode: it syncs, is
 *    ready, acts on a removed backend ("removal batch", sockdiag_agent_batches_total) and exits 0
 *    on SIGTERM.
 * The Dockerfile is read, not restated here (scripts/dockerfile.ts): a changed Dockerfile changes
 * what is replayed, and an instruction the replay cannot follow fails it. Node resolves modules from
 * the layout only (no node_modules above it, NODE_PATH unset), as in the image.
 */
import { spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join, posix, relative } from "node:path";
import { createInterface } from "node:readline";
import { setTimeout as sleep } from "node:timers/promises";
import { fileURLToPath } from "node:url";
import { dockerignore, parseDockerfile, type Stage, type Step } from "./dockerfile.js";

const ROOT = fileURLToPath(new URL("../../", import.meta.url));
const DOCKERFILE = "deploy/Dockerfile";
/** Longest wait for one thing the agent should do. */
const WAIT_MS = 60_000;

/** The stand-in API server and slice builder of packages/agent/test/kit, as far as used here. */
interface Kit {
  StandInApiServer: { start(): Promise<StandIn> };
  udpSlice(name: string, service: string, port: number, addresses: string[]): object;
}
interface StandIn {
  apply(slice: object): object;
  writeKubeconfig(path: string): Promise<string>;
  close(): Promise<void>;
}

const log = (text: string) => process.stderr.write(`replay-dockerfile: ${text}\n`);

/** The environment for RUN and the entrypoint: none of an enclosing npm run's variables. */
function baseEnv(): NodeJS.ProcessEnv {
  const env = Object.fromEntries(
    Object.entries(process.env).filter(
      ([k]) => !/^npm_/i.test(k) || /^npm_config_(cache|registry|userconfig)$/i.test(k),
    ),
  );
  delete env.NODE_PATH;
  delete env.NODE_OPTIONS;
  return env;
}

/** A stage's filesystem in the replay: absolute paths of the stage map into `root`. */
interface StageFs {
  stage: Stage;
  root: string;
  workdir: string;
  env: Record<string, string>;
  entrypoint: string[] | undefined;
}

const at = (fs: StageFs, path: string) => join(fs.root, posix.resolve(fs.workdir, path));

/** Copy `source` (a file or a directory's contents) to `dest`, as COPY does; symlinks stay links. */
function copy(source: string, dest: string, destIsDir: boolean, skip?: (path: string) => boolean): void {
  const filter = skip && ((path: string) => !skip(path));
  if (lstatSync(source).isDirectory()) {
    mkdirSync(dest, { recursive: true });
    cpSync(source, dest, { recursive: true, verbatimSymlinks: true, ...(filter ? { filter } : {}) });
    return;
  }
  const target = destIsDir ? join(dest, basename(source)) : dest;
  mkdirSync(dirname(target), { recursive: true });
  cpSync(source, target, { verbatimSymlinks: true });
}

function replayStep(fs: StageFs, step: Step, done: StageFs[], context: string, final: boolean): void {
  const where = `${DOCKERFILE}:${step.line}`;
  switch (step.kind) {
    case "workdir":
      fs.workdir = posix.resolve(fs.workdir, step.path);
      mkdirSync(at(fs, "."), { recursive: true });
      return;
    case "env":
      Object.assign(fs.env, step.vars);
      return;
    case "entrypoint":
      fs.entrypoint = step.argv;
      return;
    case "run": {
      if (final) throw new Error(`${where}: RUN in the last stage: the replay cannot run it in the layout`);
      log(`${where}: RUN ${step.command}`);
      const env = { ...baseEnv(), npm_config_prefer_offline: "true", ...fs.env };
      const r = spawnSync("sh", ["-c", step.command], { cwd: at(fs, "."), env, stdio: "inherit" });
      if (r.status !== 0) throw new Error(`${where}: RUN exited ${r.status ?? r.signal}: ${step.command}`);
      return;
    }
    case "copy": {
      const destIsDir = step.dest.endsWith("/") || step.sources.length > 1;
      const dest = at(fs, step.dest);
      const ignored = step.from === undefined ? dockerignore(readIgnore(context)) : undefined;
      for (const source of step.sources) {
        if (/[*?[]/.test(source)) throw new Error(`${where}: the replay copies no wildcard (${source})`);
        if (ignored) {
          // Docker never sends an ignored path in the build context: COPY of one fails there.
          const path = relative(context, join(context, source));
          if (path !== "" && ignored(path))
            throw new Error(`${where}: ${source} is excluded by the dockerignore`);
          copy(join(context, source), dest, destIsDir, (p) => ignored(relative(context, p)));
          continue;
        }
        const from = done.find((d, i) => d.stage.name === step.from || String(i) === step.from);
        if (!from) throw new Error(`${where}: no earlier stage ${step.from}`);
        copy(join(from.root, posix.resolve("/", source)), dest, destIsDir);
      }
      return;
    }
  }
}

/** deploy/Dockerfile.dockerignore (BuildKit's rule for `-f deploy/Dockerfile`), else .dockerignore. */
function readIgnore(context: string): string {
  for (const name of [`${DOCKERFILE}.dockerignore`, ".dockerignore"])
    if (existsSync(join(context, name))) return readFileSync(join(context, name), "utf8");
  return "";
}

/** Replay the Dockerfile in `work`; the last stage's filesystem. */
function replay(context: string, work: string): StageFs {
  const stages = parseDockerfile(readFileSync(join(context, DOCKERFILE), "utf8"));
  const done: StageFs[] = [];
  stages.forEach((stage, i) => {
    log(
      `stage ${i}${stage.name ? ` (${stage.name})` : ""}: FROM ${stage.image}, on Node.js ${process.version}`,
    );
    const fs: StageFs = {
      stage,
      root: join(work, `stage-${i}`),
      workdir: "/",
      env: {},
      entrypoint: undefined,
    };
    mkdirSync(fs.root);
    for (const step of stage.steps) replayStep(fs, step, done, context, i === stages.length - 1);
    done.push(fs);
  });
  return done.at(-1)!;
}

/**
 * What the image holds is what the agent needs: no package the lockfile marks dev-only (typescript,
 * esbuild, biome, ...), and koffi's prebuilt binary for this machine.
 */
function checkLayout(image: StageFs, context: string): void {
  const lock = JSON.parse(readFileSync(join(context, "package-lock.json"), "utf8")) as {
    packages: Record<string, { dev?: boolean }>;
  };
  const app = at(image, ".");
  for (const [path, entry] of Object.entries(lock.packages))
    if (entry.dev && existsSync(join(app, path))) throw new Error(`the image holds the dev-only ${path}`);
  const modules = at(image, "node_modules");
  const koffi = join(modules, "@koromix", `koffi-${process.platform}-${process.arch}`);
  if (!existsSync(koffi))
    throw new Error(`the image lacks koffi's prebuilt binary (${relative(image.root, koffi)})`);
  for (let dir = dirname(image.root); dir !== dirname(dir); dir = dirname(dir))
    if (existsSync(join(dir, "node_modules")))
      throw new Error(`${dir}/node_modules would be seen from the layout; use another TMPDIR`);
}

/** The ENTRYPOINT as a command here: `node` is the Node.js running this, absolute paths lie in the layout. */
function entrypoint(image: StageFs): {
  command: string;
  args: string[];
  cwd: string;
  env: NodeJS.ProcessEnv;
} {
  const [program, ...args] = image.entrypoint ?? [];
  if (program !== "node") throw new Error(`the ENTRYPOINT must run node, not ${program ?? "nothing"}`);
  return {
    command: process.execPath,
    args: args.map((a) => (a.startsWith("/") ? join(image.root, a) : a)),
    cwd: at(image, "."),
    env: { ...baseEnv(), ...image.env },
  };
}

function checkHelp(image: StageFs): void {
  const ep = entrypoint(image);
  const r = spawnSync(ep.command, [...ep.args, "--help"], { cwd: ep.cwd, env: ep.env, encoding: "utf8" });
  if (r.status !== 0 || !r.stdout.startsWith("Usage: sockdiag-agent"))
    throw new Error(`ENTRYPOINT --help exited ${r.status}: ${r.stdout}${r.stderr}`);
  log("ENTRYPOINT --help: ok");
}

/** Ask `url` until it answers 200 with a body `ok` accepts, for at most WAIT_MS. */
async function answers(url: string, ok: (body: string) => boolean): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  let last = "no answer";
  while (Date.now() < deadline) {
    try {
      const res = await fetch(url);
      const body = await res.text();
      if (res.status === 200 && ok(body)) return;
      last = `${res.status}: ${body}`;
    } catch (err) {
      last = String(err);
    }
    await sleep(50);
  }
  throw new Error(`${url} did not answer as expected within ${WAIT_MS} ms; last: ${last}`);
}

/** Run the entrypoint against the stand-in API server until it has acted on one removal. */
async function checkAgainstStandIn(image: StageFs, work: string): Promise<void> {
  const kit = (await import(
    new URL("../../packages/agent/dist/test/kit/index.js", import.meta.url).href
  )) as Kit;
  const api = await kit.StandInApiServer.start();
  const ep = entrypoint(image);
  const pins = join(work, "pins");
  mkdirSync(pins);
  try {
    api.apply(kit.udpSlice("dns-a", "dns", 53, ["10.9.0.1", "10.9.0.2"]));
    const kubeconfig = await api.writeKubeconfig(join(work, "kubeconfig.json"));
    const args = [
      ...ep.args,
      ...["--kubeconfig", kubeconfig, "--state-dir", join(work, "state"), "--listen", "127.0.0.1:0"],
      ...["--netns-dir", pins, "--no-discover", "--dry-run", "--coalesce", "100"],
    ];
    const child = spawn(ep.command, args, { cwd: ep.cwd, env: ep.env, stdio: ["ignore", "pipe", "inherit"] });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    const lines: Record<string, unknown>[] = [];
    const waiters = new Set<() => void>();
    createInterface({ input: child.stdout }).on("line", (line) => {
      lines.push(JSON.parse(line) as Record<string, unknown>);
      for (const w of waiters) w();
    });
    const logged = (msg: string) =>
      new Promise<Record<string, unknown>>((resolve, reject) => {
        const timer = setTimeout(
          () => reject(new Error(`no "${msg}" log line within ${WAIT_MS} ms`)),
          WAIT_MS,
        );
        const check = () => {
          const found = lines.find((l) => l.msg === msg);
          if (!found) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve(found);
        };
        waiters.add(check);
        check();
      });
    try {
      const started = await logged("agent started");
      await logged("endpointslices synced");
      const base = `http://${String(started.listen)}`;
      for (const path of ["/healthz", "/readyz"]) await answers(base + path, () => true);
      api.apply(kit.udpSlice("dns-a", "dns", 53, ["10.9.0.1"]));
      const batch = await logged("removal batch");
      await answers(`${base}/metrics`, (text) => /^sockdiag_agent_batches_total 1$/m.test(text));
      log(`ENTRYPOINT against the stand-in API server: ready, removal batch ${JSON.stringify(batch)}`);
      child.kill("SIGTERM");
      const code = await exited;
      if (code !== 0) throw new Error(`the agent exited ${code} after SIGTERM`);
      log("ENTRYPOINT stopped on SIGTERM: exit 0");
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    }
  } finally {
    await api.close();
  }
}

/** `git ARGS` in `cwd`; its stdout. */
function git(cwd: string, ...args: string[]): string {
  const r = spawnSync("git", args, { cwd, encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
  if (r.status !== 0) throw new Error(`git ${args.join(" ")} in ${cwd} failed`);
  return r.stdout;
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), "sockdiag-replay-"));
  try {
    const context = join(work, "context");
    const head = git(ROOT, "rev-parse", "HEAD").trim();
    if (git(ROOT, "status", "--porcelain", "--untracked-files=no") !== "")
      log("the checkout has uncommitted changes: they are not part of the clean clone replayed");
    git(ROOT, "clone", "--quiet", "--no-hardlinks", ROOT, context);
    git(context, "checkout", "--quiet", "--detach", head);
    log(`replaying ${DOCKERFILE} of ${head}`);
    const image = replay(context, work);
    checkLayout(image, context);
    checkHelp(image);
    await checkAgainstStandIn(image, work);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

main().then(
  () => log("ok"),
  (err: unknown) => {
    log(`FAILED: ${err instanceof Error ? err.message : String(err)}`);
    process.exitCode = 1;
  },
);
