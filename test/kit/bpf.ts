/** What BPF objects are loaded: this process's descriptors of them, and the kernel's lists (bpftool). */
import { execFileSync } from "node:child_process";
import { readdirSync, readlinkSync } from "node:fs";

/** This process's descriptors of BPF programs, maps, links and iterators (anon_inode:bpf-*). */
export function bpfFds(): string[] {
  const found: string[] = [];
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      if (/^anon_inode:\[?bpf/.test(link)) found.push(`${fd} ${link}`);
    } catch {
      // closed between readdir and readlink
    }
  }
  return found;
}

interface Listed {
  id: number;
  name?: string;
  prog_id?: number;
}

function bpftool(...args: string[]): Listed[] {
  return JSON.parse(execFileSync("bpftool", ["-j", ...args], { encoding: "utf8" }) || "[]") as Listed[];
}

/**
 * The programs and maps the kernel holds whose name starts with `prefix`, and the links to such
 * programs, as bpftool lists them: empty when nothing of ours stayed loaded.
 */
export function loadedBpf(prefix = "sockdiag"): string[] {
  const progs = bpftool("prog", "show").filter((p) => p.name?.startsWith(prefix));
  const ids = new Set(progs.map((p) => p.id));
  const maps = bpftool("map", "show").filter((m) => m.name?.startsWith(prefix));
  const links = bpftool("link", "show").filter((l) => l.prog_id !== undefined && ids.has(l.prog_id));
  return [
    ...progs.map((p) => `prog ${p.id} ${p.name}`),
    ...maps.map((m) => `map ${m.id} ${m.name}`),
    ...links.map((l) => `link ${l.id} of prog ${l.prog_id}`),
  ];
}

/**
 * loadedBpf once the kernel has finished freeing: a program and its maps go after an RCU grace
 * period and a work item, not at the last close. Polls until nothing is listed or `timeoutMs`
 * passes, then gives what is still listed.
 */
export async function loadedBpfSettled(timeoutMs = 5000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const listed = loadedBpf();
    if (listed.length === 0 || Date.now() > deadline) return listed;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
