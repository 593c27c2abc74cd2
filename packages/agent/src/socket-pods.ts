/**
 * Whose sockets a batch destroyed: the pods of the processes holding them (ss -p's way: the
 * socket's inode among a process's descriptors), read from each process's cgroup. Not from the
 * namespace: host-network pods share the host's with every process of the node.
 */
import { readdir } from "node:fs/promises";
import { findSocketOwners, type SocketOwner } from "sockdiag";

/** Processes whose descriptors are read between two turns of the event loop. */
const SCAN_CHUNK = 64;

/** A socket the batch destroyed: its inode, and its backend as text (backendText). */
export interface DestroyedSocket {
  inode: number;
  backend: string;
}

/** A pod's destroyed sockets, counted per backend (as text). */
export interface PodSockets {
  uid: string;
  backends: Map<string, number>;
}

/**
 * The pods holding `sockets`, each with its sockets counted per backend. A socket no process
 * holds any more (closed since), or held by none in a pod, counts for no pod; one held in two
 * pods (a passed descriptor) counts for both.
 */
export async function podsOfSockets(
  sockets: readonly DestroyedSocket[],
  procRoot = "/proc",
): Promise<PodSockets[]> {
  if (sockets.length === 0) return [];
  const owners = await ownersOf(new Set(sockets.map((s) => s.inode)), procRoot);
  const pods = new Map<string, PodSockets>();
  for (const socket of sockets) {
    const uids = new Set((owners.get(socket.inode) ?? []).flatMap((o) => (o.pod ? [o.pod.uid] : [])));
    for (const uid of uids) {
      const pod = pods.get(uid) ?? { uid, backends: new Map<string, number>() };
      pods.set(uid, pod);
      pod.backends.set(socket.backend, (pod.backends.get(socket.backend) ?? 0) + 1);
    }
  }
  return [...pods.values()];
}

/** findSocketOwners over every process, SCAN_CHUNK at a time: the event loop turns between them. */
async function ownersOf(wanted: ReadonlySet<number>, procRoot: string): Promise<Map<number, SocketOwner[]>> {
  const pids = (await readdir(procRoot)).map(Number).filter((pid) => Number.isInteger(pid) && pid > 0);
  const owners = new Map<number, SocketOwner[]>();
  for (let i = 0; i < pids.length; i += SCAN_CHUNK) {
    const chunk = pids.slice(i, i + SCAN_CHUNK);
    for (const [inode, found] of findSocketOwners(wanted, procRoot, { pods: true, pids: chunk }))
      owners.set(inode, [...(owners.get(inode) ?? []), ...found]);
    await new Promise((resolve) => setImmediate(resolve));
  }
  return owners;
}
