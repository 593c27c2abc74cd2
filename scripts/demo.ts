/**
 * `npm run demo`: the whole story in one command. A throwaway scene — the host plus three network
 * namespaces, each with UDP backends A and B on loopback and clients connected to them — then
 * backend A goes away, `sockdiag terminate-backend` destroys every socket still connected to it,
 * and A's clients get ECONNABORTED and reconnect to B while B's clients never notice. Everything is
 * removed at the end, also on Ctrl-C.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { add, remove } from "../src/netns/index.js";

const here = dirname(fileURLToPath(import.meta.url));
const CLI = join(here, "../../src/cli/bin.cjs");
const NODE_SCRIPT = join(here, "demo-node.js");
const PREFIX = "sockdiag-demo-";
const NAMES = [1, 2, 3].map((i) => `${PREFIX}${i}`);
const BACKEND_A = "127.0.0.1:15353";
const SHOW_FILTER = ["dport", "=", ":15353", "or", "dport", "=", ":15354"];

interface DemoEvent {
  node: string;
  client?: string;
  event: string;
  [key: string]: unknown;
}

const bold = (s: string) => (process.stdout.isTTY ? `\x1b[1m${s}\x1b[0m` : s);
const step = (n: number, text: string) => console.log(`\n${bold(`== ${n}. ${text}`)}\n`);

class Scene {
  readonly nodes: ChildProcess[] = [];
  readonly events: DemoEvent[] = [];
  private readonly waiters: (() => void)[] = [];
  private namespaces: string[] = [];

  setUp(): void {
    for (const name of leftovers()) remove(name);
    for (const name of NAMES) {
      add(name, { loopbackUp: true }).close();
      this.namespaces.push(name);
    }
    this.start("(host)", process.execPath, [NODE_SCRIPT, "(host)"]);
    for (const name of NAMES)
      this.start(name, "ip", ["netns", "exec", name, process.execPath, NODE_SCRIPT, name]);
  }

  private start(label: string, command: string, args: string[]): void {
    const child = spawn(command, args, { stdio: ["pipe", "pipe", "inherit"] });
    this.nodes.push(child);
    createInterface({ input: child.stdout! }).on("line", (line) => {
      try {
        this.events.push(JSON.parse(line) as DemoEvent);
      } catch {
        console.log(`[${label}] ${line}`);
      }
      for (const w of this.waiters.splice(0)) w();
    });
  }

  /** Resolve when `check` holds over the events so far; reject after `ms` naming what was awaited. */
  until(what: string, check: (events: DemoEvent[]) => boolean, ms = 10_000): Promise<void> {
    return new Promise((resolve, reject) => {
      const deadline = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms);
      const test = () => {
        if (check(this.events)) {
          clearTimeout(deadline);
          resolve();
        } else this.waiters.push(test);
      };
      test();
    });
  }

  tell(command: string): void {
    for (const n of this.nodes) n.stdin?.write(`${command}\n`);
  }

  tearDown(): void {
    for (const n of this.nodes) {
      n.stdin?.end();
      if (n.exitCode === null && n.pid) n.kill("SIGTERM");
    }
    for (const name of this.namespaces.splice(0)) {
      try {
        remove(name);
      } catch (err) {
        console.error(`could not remove namespace ${name}: ${(err as Error).message}`);
      }
    }
  }
}

function leftovers(): string[] {
  try {
    return readdirSync("/run/netns").filter((n) => n.startsWith(PREFIX));
  } catch {
    return [];
  }
}

function sockdiag(args: string[]): void {
  console.log(`$ sockdiag ${args.map((a) => (/[\s*()|&!=<>]/.test(a) ? `'${a}'` : a)).join(" ")}`);
  try {
    process.stdout.write(execFileSync(process.execPath, [CLI, ...args], { encoding: "utf8" }));
  } catch (err) {
    const e = err as { stdout?: string; stderr?: string; status?: number };
    process.stdout.write(e.stdout ?? "");
    process.stdout.write(e.stderr ?? "");
    console.log(`(exit status ${e.status})`);
  }
}

const clientsOf = (events: DemoEvent[], port: string) =>
  events
    .filter((e) => e.event === "connected" && String(e.backend).endsWith(port))
    .map((e) => `${e.node}/${e.client}`);

async function main(): Promise<void> {
  if (process.getuid?.() !== 0) {
    console.error("The demo creates network namespaces and destroys sockets: run it as root.");
    process.exitCode = 1;
    return;
  }
  const scene = new Scene();
  const stop = (signal: string) => {
    console.log(`\n${signal}: removing the scene`);
    scene.tearDown();
    process.exit(130);
  };
  process.on("SIGINT", () => stop("SIGINT"));
  process.on("SIGTERM", () => stop("SIGTERM"));
  try {
    step(
      1,
      `A scene: the host and namespaces ${NAMES.join(", ")}; in each, backends A (${BACKEND_A}) and B (127.0.0.1:15354) and three UDP clients`,
    );
    scene.setUp();
    await scene.until("every node to be ready", (ev) => ev.filter((e) => e.event === "ready").length === 4);
    await scene.until(
      "every client to get a reply",
      (ev) => ev.filter((e) => e.event === "reply").length === 12,
    );
    sockdiag(["ls", "-u", "--all-netns", ...SHOW_FILTER]);

    const victims = clientsOf(scene.events, ":15353");
    step(2, `Backend A (${BACKEND_A}) goes away: its ${victims.length} clients now send into a black hole`);
    scene.tell("blackhole");
    await scene.until(
      "A's clients to notice",
      (ev) => ev.filter((e) => e.event === "no-reply").length >= victims.length,
    );
    for (const e of scene.events.filter((e) => e.event === "no-reply"))
      console.log(`  ${e.node.padEnd(18)} ${e.client}: no reply from ${e.backend}`);

    step(3, "The load balancer removes backend A: terminate every socket still connected to it");
    sockdiag(["terminate-backend", BACKEND_A]);

    step(4, "A's clients see ECONNABORTED and reconnect to backend B");
    const from = scene.events.length;
    await scene.until("A's clients to reconnect and get replies from B", (ev) => {
      const after = ev.slice(from);
      return after.filter((e) => e.event === "reply" && e.from === "pong from B").length >= victims.length;
    });
    for (const e of scene.events.slice(from)) {
      if (e.event === "error") console.log(`  ${e.node.padEnd(18)} ${e.client}: ${e.code} on ${e.backend}`);
      if (e.event === "reconnected")
        console.log(`  ${e.node.padEnd(18)} ${e.client}: reconnected to ${e.backend}`);
    }

    step(5, "After: every client talks to backend B; B's own clients never saw an error");
    const statusFrom = scene.events.length;
    scene.tell("status");
    await scene.until(
      "every client's status",
      (ev) => ev.slice(statusFrom).filter((e) => e.event === "status").length === 12,
    );
    for (const e of scene.events.slice(statusFrom)) {
      const errors = (e.errors as string[]).length > 0 ? (e.errors as string[]).join(",") : "none";
      console.log(
        `  ${e.node.padEnd(18)} ${String(e.client).padEnd(32)} now -> ${e.backend}  errors: ${errors}`,
      );
    }
    sockdiag(["ls", "-u", "--all-netns", ...SHOW_FILTER]);
  } finally {
    step(6, "Removing the scene");
    scene.tearDown();
    console.log(`removed namespaces ${NAMES.join(", ")} and stopped the client processes`);
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  process.exitCode = 1;
});
