/**
 * A benchmark child that holds UDP sockets in MANY namespaces at once (the test kit's holder
 * holds one namespace per process, too heavy for 100 namespaces). It enters each namespace only
 * to create sockets (runIn), so they belong to it, and keeps them open.
 *
 * argv: JSON { namespaces: string[] (pinned paths), perNamespace: number,
 *              targets: number | number[] (one for each namespace),
 *              target: { address: string, port: number }, backends?: { address, port }[] }
 * With `backends`, `targets` sockets are connected to each of them instead of to `target`. The
 * other sockets are connected elsewhere (see openOthers).
 * stdin lines: "targets" (open `targets` more sockets connected to the target in every namespace,
 * replacing destroyed ones), "exit". Prints "ready" after each step.
 */
import { createInterface } from "node:readline";
import { fromPath, runIn } from "../src/netns/index.js";
import { AF_INET, bind, close, connect, SOCK_DGRAM, socket } from "../src/sys/socket.js";

interface Plan {
  namespaces: string[];
  perNamespace: number;
  targets: number | number[];
  target: { address: string; port: number };
  backends?: { address: string; port: number }[];
}

const plan = JSON.parse(process.argv[2] ?? "{}") as Plan;
const held: number[] = [];
let targetFds: number[] = [];

function sockaddr(address: string, port: number): Buffer {
  const b = Buffer.alloc(16);
  b.writeUInt16LE(AF_INET, 0);
  b.writeUInt16BE(port, 2);
  address.split(".").forEach((part, i) => {
    b[4 + i] = Number(part);
  });
  return b;
}

function udp(connectTo: Buffer, from?: Buffer): number {
  const fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (from) bind(fd, from);
  connect(fd, connectTo);
  return fd;
}

function openTargets(): void {
  for (const fd of targetFds) close(fd);
  targetFds = [];
  const targets = (plan.backends ?? [plan.target]).map((b) => sockaddr(b.address, b.port));
  plan.namespaces.forEach((path, n) => {
    using ns = fromPath(path);
    runIn(ns, () => {
      for (const target of targets) for (let i = 0; i < targetsIn(n); i++) targetFds.push(udp(target));
    });
  });
}

/** Sockets connected to each target in the plan's namespace `n`. */
function targetsIn(n: number): number {
  return typeof plan.targets === "number" ? plan.targets : (plan.targets[n] ?? 0);
}

function openOthers(): void {
  plan.namespaces.forEach((path, n) => {
    using ns = fromPath(path);
    runIn(ns, () => {
      for (let i = 0; i < plan.perNamespace - targetsIn(n); i++) {
        // As a pod's clients are: every socket connected, from one of 200 local addresses to one
        // of 500 remote ones on varied ports (127.20/16 and 127.30/16: never the target).
        const to = sockaddr(
          `127.20.${Math.floor(i / 250) % 2}.${1 + (i % 250)}`,
          1024 + ((i * 7919) % 60000),
        );
        held.push(udp(to, sockaddr(`127.30.0.${1 + (i % 200)}`, 0)));
      }
    });
  });
}

openOthers();
openTargets();
console.log("ready");
createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "targets") {
    openTargets();
    console.log("ready");
  } else if (line === "exit") {
    process.exit(0);
  }
});
process.stdin.on("end", () => process.exit(0));
