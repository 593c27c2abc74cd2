/**
 * Helpers for the netns tests: the root gate, the thread's namespace as the kernel reports it (the
 * oracle every test checks after each operation), scratch pin directories, and `ip` run inside an
 * unpinned namespace through nsenter.
 */
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, readlinkSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, test } from "node:test";
import type { NetNS } from "../../src/netns/index.js";
import { MNT_DETACH, MS_BIND, mount, umount2 } from "../../src/sys/index.js";

/**
 * rootOnly returns the `skip` option for root-only suites: false as root; otherwise a reason, after
 * registering a failing test when CI=true (CI must run these) or warning loudly.
 */
export function rootOnly(): string | false {
  if (process.getuid?.() === 0) return false;
  const reason = "needs root (CAP_SYS_ADMIN) to create and enter network namespaces";
  if (process.env.CI === "true") test("root is available", () => assert.fail(`CI=true: ${reason}`));
  else console.warn(`SKIPPING netns tests: ${reason}`);
  return reason;
}

/** threadNetns reads the calling thread's namespace from the kernel: "net:[ino]". */
export function threadNetns(): string {
  return readlinkSync("/proc/thread-self/ns/net");
}

/** stayHome registers an afterEach hook asserting that every test left the thread in its namespace. */
export function stayHome(): void {
  const home = threadNetns();
  afterEach(() => assert.equal(threadNetns(), home, "the thread must be back in its own namespace"));
}

/** The "net:[ino]" link of a handle, to compare with threadNetns(). */
export function linkOf(ns: NetNS): string {
  return `net:[${ns.ino}]`;
}

const SCRATCH = /^sdt-netns-(\d+)-/;
let scratchCount = 0;

/** A scratch directory under the temp dir; `pin` bind-mounts namespaces into it, `dispose` undoes all. */
export interface Scratch {
  readonly dir: string;
  /** Bind-mount `ns` onto an empty file `name` in the directory (what ip netns add does); returns its path. */
  pin(name: string, ns: NetNS): string;
  /** Unmount and delete one pin. */
  unpin(name: string): void;
  /** Unmount everything mounted under the directory and delete it. */
  dispose(): void;
}

/** scratchDir makes a fresh directory "sdt-netns-<pid>-<n>" in the temp dir. */
export function scratchDir(): Scratch {
  const dir = join(tmpdir(), `sdt-netns-${process.pid}-${++scratchCount}`);
  mkdirSync(dir);
  return {
    dir,
    pin(name, ns) {
      const path = join(dir, name);
      writeFileSync(path, "");
      mount(`/proc/self/fd/${ns.fd}`, path, "none", MS_BIND);
      return path;
    },
    unpin(name) {
      const path = join(dir, name);
      umount2(path, MNT_DETACH);
      rmSync(path);
    },
    dispose: () => removeScratch(dir),
  };
}

function removeScratch(dir: string): void {
  for (const mountPoint of mountsUnder(dir).reverse()) umount2(mountPoint, MNT_DETACH);
  rmSync(dir, { recursive: true, force: true });
}

/** Mount points at or under `dir`, from /proc/self/mountinfo (field 5), in mount order. */
export function mountsUnder(dir: string): string[] {
  return readFileSync("/proc/self/mountinfo", "utf8")
    .split("\n")
    .map((line) => line.split(" ")[4] ?? "")
    .filter((point) => point === dir || point.startsWith(`${dir}/`));
}

/** Remove scratch directories left by crashed runs (their pid is gone). */
export function cleanupScratchLeftovers(): void {
  for (const name of readdirSync(tmpdir())) {
    const pid = Number(SCRATCH.exec(name)?.[1] ?? Number.NaN);
    if (Number.isNaN(pid) || pid === process.pid || isAlive(pid)) continue;
    removeScratch(join(tmpdir(), name));
  }
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

/** The flags `ip -j link show lo` reports inside `ns` (entered by nsenter through ns.path). */
export function loFlags(ns: NetNS): string[] {
  const out = execFileSync("nsenter", [
    `--net=/proc/${process.pid}/fd/${ns.fd}`,
    "ip",
    "-j",
    "link",
    "show",
    "lo",
  ]);
  const [link] = JSON.parse(out.toString()) as { flags: string[] }[];
  assert.ok(link, "ip link show lo answered nothing");
  return link.flags;
}
