/**
 * `npm run demo`: the whole story in one command. A throwaway scene of its own — a namespace that
 * plays the node ("(host)" in sockdiag's reports) and three pods, pinned in a directory of the
 * demo's own — each with UDP backends A and B on loopback and clients connected to them; in pod-a
 * one more client reaches A through a Service address that nftables DNATs to it. Backend A goes
 * away, `sockdiag terminate-backend` destroys every socket still connected to it and deletes the
 * Service client's conntrack entry: A's clients get ECONNABORTED and reconnect to B, the Service
 * client's next datagram is DNATed to B, B's clients never notice. sockdiag runs inside the node
 * namespace and is given the demo's pins only, so nothing outside the scene is visited. Everything
 * is removed at the end, also on Ctrl-C.
 */
import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readdirSync, rmdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { add, remove } from "../src/netns/index.js";
import { MNT_DETACH, umount2 } from "../src/sys/namespace.js";

const here = dirname(fileURLToPath(import.meta.url));
const CLI = join(here, "../../src/cli/bin.cjs");
const NODE_SCRIPT = join(here, "demo-node.js");
/** The demo's pin directory: its node namespace and its pods, nothing else. */
export const DEMO_DIR = "/run/sockdiag-demo";
const NODE = "node";
const PODS = ["pod-a", "pod-b", "pod-c"];
const BACKEND_A = "127.0.0.1:15353";
const BACKEND_B = "127.0.0.1:15354";
/** The Service address pod-a's fourth client talks to, DNATed to a backend by nftables in pod-a. */
const SERVICE = "10.96.0.10:53";
const SHOW_FILTER = ["dport", "=", ":15353", "or", "dport", "=", ":15354", "or", "dport", "=", ":53"];
/** Every namespace of the scene, for sockdiag: the node's own and the pods' pins. */
const SCOPE = ["--netns-dir", DEMO_DIR, "--no-discover"];

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
    removeLeftovers();
    for (const name of [NODE, ...PODS]) {
      add(name, { dir: DEMO_DIR, loopbackUp: true }).close();
      this.namespaces.push(name);
    }
    inNetns("pod-a", "ip", ["addr", "add", `${SERVICE.split(":")[0]}/32`, "dev", "lo"]);
    inNetns("pod-a", "nft", [
      "add table ip demo; add chain ip demo out { type nat hook output priority -100 ; }",
    ]);
    serviceTo(BACKEND_A);
    for (const name of [NODE, ...PODS]) {
      const label = name === NODE ? "(host)" : name;
      const args = [`--net=${DEMO_DIR}/${name}`, process.execPath, NODE_SCRIPT, label];
      this.start(label, "nsenter", name === "pod-a" ? [...args, SERVICE] : args);
    }
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
        remove(name, { dir: DEMO_DIR });
      } catch (err) {
        console.error(`could not remove namespace ${name}: ${(err as Error).message}`);
      }
    }
    removeDemoDir();
  }
}

/** Run `command` in the demo's namespace `name`. */
function inNetns(name: string, command: string, args: string[]): string {
  return execFileSync("nsenter", [`--net=${DEMO_DIR}/${name}`, command, ...args], { encoding: "utf8" });
}

/** Point pod-a's Service at `backend`, as kube-proxy rewrites its DNAT rule when endpoints change. */
function serviceTo(backend: string): void {
  const [ip, port] = SERVICE.split(":") as [string, string];
  inNetns("pod-a", "nft", [
    `flush chain ip demo out; add rule ip demo out ip daddr ${ip} udp dport ${port} dnat to ${backend}`,
  ]);
}

/** What an interrupted run left: pins in the demo's directory, the directory's own mount. */
function removeLeftovers(): void {
  if (!existsSync(DEMO_DIR)) return;
  for (const name of readdirSync(DEMO_DIR)) remove(name, { dir: DEMO_DIR });
  removeDemoDir();
}

function removeDemoDir(): void {
  try {
    umount2(DEMO_DIR, MNT_DETACH);
  } catch {
    // Not a mount point (any more): nothing to detach.
  }
  rmdirSync(DEMO_DIR);
}

/** Run sockdiag inside the node namespace, as an operator on that node would, and print its output. */
function sockdiag(args: string[]): void {
  console.log(`$ sockdiag ${args.map((a) => (/[\s*()|&!=<>]/.test(a) ? `'${a}'` : a)).join(" ")}`);
  try {
    process.stdout.write(
      execFileSync("nsenter", [`--net=${DEMO_DIR}/${NODE}`, process.execPath, CLI, ...args], {
        encoding: "utf8",
      }),
    );
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
      `A scene of its own in ${DEMO_DIR}: a node ("(host)") and ${PODS.join(", ")}, each with backends A (${BACKEND_A}) and B (${BACKEND_B}) and three UDP clients; in pod-a a fourth talks to Service ${SERVICE}, DNATed to A`,
    );
    scene.setUp();
    const clients = 4 * 3 + 1;
    await scene.until("every node to be ready", (ev) => ev.filter((e) => e.event === "ready").length === 4);
    await scene.until(
      "every client to get a reply",
      (ev) => ev.filter((e) => e.event === "reply").length === clients,
    );
    sockdiag(["ls", "-u", "--all-netns", ...SCOPE, ...SHOW_FILTER]);
    sockdiag(["conntrack", "ls", "--netns", `${DEMO_DIR}/pod-a`, "-p", "udp", "--orig-dst", SERVICE]);

    const victims = clientsOf(scene.events, ":15353");
    step(
      2,
      `Backend A goes away and the load balancer points the Service at B: A's ${victims.length} clients, and the Service client whose conntrack entry still leads to A, send into a black hole`,
    );
    scene.tell("blackhole");
    serviceTo(BACKEND_B);
    await scene.until(
      "A's clients to notice",
      (ev) => ev.filter((e) => e.event === "no-reply").length >= victims.length + 1,
    );
    for (const e of scene.events.filter((e) => e.event === "no-reply"))
      console.log(`  ${e.node.padEnd(10)} ${e.client}: no reply from ${e.backend}`);

    step(3, "Terminate every socket still connected to A, and delete the conntrack entries DNATed to it");
    sockdiag(["terminate-backend", BACKEND_A, ...SCOPE]);

    step(
      4,
      "A's clients see ECONNABORTED and reconnect to B; the Service client's next datagram is DNATed to B",
    );
    const from = scene.events.length;
    await scene.until("A's clients and the Service client to get replies from B", (ev) => {
      const after = ev.slice(from);
      return (
        after.filter((e) => e.event === "reply" && e.from === "pong from B").length >= victims.length + 1
      );
    });
    for (const e of scene.events.slice(from)) {
      if (e.event === "error") console.log(`  ${e.node.padEnd(10)} ${e.client}: ${e.code} on ${e.backend}`);
      if (e.event === "reconnected")
        console.log(`  ${e.node.padEnd(10)} ${e.client}: reconnected to ${e.backend}`);
      if (e.event === "reply" && String(e.client).includes("Service"))
        console.log(`  ${e.node.padEnd(10)} ${e.client}: ${e.from}, the same socket, no error`);
    }
    sockdiag(["conntrack", "ls", "--netns", `${DEMO_DIR}/pod-a`, "-p", "udp", "--orig-dst", SERVICE]);

    step(5, "After: every client talks to backend B; B's own clients never saw an error");
    const statusFrom = scene.events.length;
    scene.tell("status");
    await scene.until(
      "every client's status",
      (ev) => ev.slice(statusFrom).filter((e) => e.event === "status").length === clients,
    );
    for (const e of scene.events.slice(statusFrom)) {
      const errors = (e.errors as string[]).length > 0 ? (e.errors as string[]).join(",") : "none";
      console.log(
        `  ${e.node.padEnd(10)} ${String(e.client).padEnd(40)} now -> ${e.backend}  errors: ${errors}`,
      );
    }
  } finally {
    step(6, "Removing the scene");
    scene.tearDown();
    console.log(`removed the namespaces ${[NODE, ...PODS].join(", ")} and stopped the client processes`);
  }
}

main().catch((err: Error) => {
  console.error(`demo failed: ${err.message}`);
  process.exitCode = 1;
});
