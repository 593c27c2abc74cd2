/**
 * `terminate-backend --dry-run`'s plan: the sockets it would destroy, grouped by whose they are —
 * the pod and container of the processes holding each (their cgroups, as the agent reads them),
 * in which namespace (its pin name), and the processes. A socket is placed by its holders, never
 * by its namespace: a host-network pod shares the host's namespace with everything else.
 */
import type { InetSocket } from "../../diag/socket.js";
import type { PodOfProcess } from "../../netns/index.js";
import { findSocketOwners, type SocketOwner } from "../../sockets/index.js";
import { escapeText } from "../render/index.js";

/** Whose a group's sockets are: a pod's processes, processes outside any pod, or no process found. */
export type PlanOwner = "pod" | "process" | "none";

/** Sockets a dry run would destroy in one namespace, held by one pod's container (or as `owner` says). */
export interface PlanGroup {
  netns: string;
  owner: PlanOwner;
  /** With owner "pod": the pod's UID and the container the holders run in. */
  pod?: PodOfProcess;
  /** The processes holding the sockets, by pid; empty when no owner was found. */
  processes: { pid: number; command: string }[];
  wouldDestroy: number;
  sockets: InetSocket[];
}

/**
 * Collects what a dry run approves, namespace by namespace: `approve` is the terminator's
 * predicate (it keeps every socket, and notes it), `endNamespace` its onNamespace.
 */
export class PlanCollector {
  readonly #pending: InetSocket[] = [];
  readonly #byNetns: [netns: string, sockets: InetSocket[]][] = [];

  readonly approve = (socket: InetSocket): boolean => {
    this.#pending.push(socket);
    return true;
  };

  endNamespace(netns: string): void {
    if (this.#pending.length > 0) this.#byNetns.push([netns, this.#pending.splice(0)]);
  }

  /**
   * The groups, in the order of the namespaces, then pods by UID and container, then processes
   * outside any pod, then sockets with no owner found. A socket several processes hold goes with
   * the pod of the lowest pid among them; every holder is listed.
   */
  groups(procRoot = "/proc"): PlanGroup[] {
    const inodes = new Set(this.#byNetns.flatMap(([, sockets]) => sockets.map((s) => s.inode)));
    const owners = inodes.size > 0 ? findSocketOwners(inodes, procRoot, { pods: true }) : new Map();
    return this.#byNetns.flatMap(([netns, sockets]) => groupsIn(netns, sockets, owners));
  }
}

function groupsIn(
  netns: string,
  sockets: readonly InetSocket[],
  owners: ReadonlyMap<number, SocketOwner[]>,
): PlanGroup[] {
  const groups = new Map<string, PlanGroup & { pids: Map<number, string> }>();
  for (const socket of sockets) {
    const holders = [...(owners.get(socket.inode) ?? [])].sort((a, b) => a.pid - b.pid);
    const pod = holders[0]?.pod;
    const owner: PlanOwner = pod ? "pod" : holders.length > 0 ? "process" : "none";
    const key = `${owner === "pod" ? 0 : owner === "process" ? 1 : 2} ${pod?.uid ?? ""} ${pod?.container ?? ""}`;
    let group = groups.get(key);
    if (!group) {
      group = { netns, owner, processes: [], wouldDestroy: 0, sockets: [], pids: new Map() };
      if (pod) group.pod = pod;
      groups.set(key, group);
    }
    group.wouldDestroy++;
    group.sockets.push(socket);
    for (const h of holders) group.pids.set(h.pid, h.command);
  }
  return [...groups.keys()].sort().map((key) => {
    const { pids, ...group } = groups.get(key)!;
    group.processes = [...pids].sort(([a], [b]) => a - b).map(([pid, command]) => ({ pid, command }));
    return group;
  });
}

/** The plan as the table shows it, one block per group. */
export function formatPlan(groups: readonly PlanGroup[]): string[] {
  const lines = groups.length > 0 ? ["would destroy, by owner:"] : [];
  for (const g of groups) {
    const count = `${g.wouldDestroy} socket${g.wouldDestroy === 1 ? "" : "s"}`;
    lines.push(`  ${whose(g)}  netns ${escapeText(g.netns)}  ${count}`);
    if (g.processes.length > 0)
      lines.push(
        `    processes: ${g.processes.map((p) => `${p.pid} (${escapeText(p.command)})`).join(", ")}`,
      );
    for (const s of g.sockets)
      lines.push(`    ${s.protocol} ${endpoint(s.src, s.sport)} -> ${endpoint(s.dst, s.dport)}`);
  }
  return lines;
}

function whose(g: PlanGroup): string {
  if (g.owner === "none") return "no owner found";
  if (!g.pod) return "not in a pod";
  return `pod ${g.pod.uid}${g.pod.container ? ` container ${g.pod.container.slice(0, 12)}` : ""}`;
}

function endpoint(address: string, port: number): string {
  return `${address.includes(":") ? `[${address}]` : address}:${port}`;
}
