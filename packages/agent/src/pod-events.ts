/**
 * PodEvents: what a batch destroyed, told to the pods that held it — one Event per pod, naming
 * the backends, their Services and the counts — and logged with the pod's namespace/name beside
 * its UID. A socket is the pod's whose processes held it; a conntrack entry the pod's whose IP is
 * the entry's original source. A pod this node's Pod watch does not know (yet) gets no Event,
 * only the log line.
 */
import type { Logger } from "pino";
import type { LateCheck } from "./aftercare.js";
import { keyText } from "./backend.js";
import type { EventRecorder, PodHappening, PodRef } from "./events.js";
import type { PodIndex } from "./pods.js";
import type { BatchOutcome } from "./terminator.js";

/** What a batch did to one pod, per backend (as text). */
interface PodCounts {
  pod: PodRef | undefined;
  uid: string;
  sockets: Map<string, number>;
  entries: Map<string, number>;
}

export class PodEvents {
  constructor(
    private readonly recorder: EventRecorder,
    private readonly pods: PodIndex,
    private readonly logger: Logger,
  ) {}

  /** The batch of `backends` destroyed `outcome.pods`' sockets and deleted `outcome.flows`: queue their Events. */
  tell(backends: readonly LateCheck[], outcome: Pick<BatchOutcome, "pods" | "flows">): void {
    const services = new Map(backends.map((b) => [keyText(b.key), b.services]));
    for (const c of this.countsOf(outcome)) {
      const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
      this.logger.info(
        {
          pod: c.pod ? `${c.pod.namespace}/${c.pod.name}` : undefined,
          uid: c.uid,
          sockets: sum(c.sockets),
          conntrackEntries: sum(c.entries),
          backends: Object.fromEntries(c.sockets),
        },
        "pod sockets destroyed",
      );
      if (c.pod) this.recorder.record(happening(c.pod, c.sockets, c.entries, services));
    }
  }

  stop(): Promise<void> {
    return this.recorder.stop();
  }

  private countsOf({ pods, flows }: Pick<BatchOutcome, "pods" | "flows">): PodCounts[] {
    const counts = new Map<string, PodCounts>();
    const of = (uid: string, pod: PodRef | undefined) => {
      const c = counts.get(uid) ?? { uid, pod, sockets: new Map(), entries: new Map() };
      counts.set(uid, c);
      return c;
    };
    for (const p of pods) of(p.uid, this.pods.pod(p.uid)).sockets = p.backends;
    for (const [src, byBackend] of flows) {
      const pod = this.pods.podOfIp(src);
      if (!pod) continue;
      const c = of(pod.uid, pod);
      for (const [key, n] of byBackend) c.entries.set(key, (c.entries.get(key) ?? 0) + n);
    }
    return [...counts.values()];
  }
}

/** The reason (by the protocols of what was done) and the note of one pod's Event. */
function happening(
  pod: PodRef,
  sockets: ReadonlyMap<string, number>,
  entries: ReadonlyMap<string, number>,
  services: ReadonlyMap<string, readonly string[]>,
): PodHappening {
  const keys = [...new Set([...sockets.keys(), ...entries.keys()])].sort();
  const protocols = new Set(keys.map((k) => k.slice(k.lastIndexOf("/") + 1)));
  const reason =
    protocols.size > 1
      ? "ConnectionsTerminated"
      : protocols.has("tcp")
        ? "TCPConnectionsTerminated"
        : "UDPConnectionsTerminated";
  const total = (m: ReadonlyMap<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
  const counted = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;
  const what = (s: number, e: number) =>
    [
      ...(s > 0 ? [counted(s, "socket", "sockets")] : []),
      ...(e > 0 ? [counted(e, "conntrack entry", "conntrack entries")] : []),
    ].join(", ");
  const parts = keys.map((k) => {
    const of = services.get(k) ?? [];
    return `${k} (${what(sockets.get(k) ?? 0, entries.get(k) ?? 0)}${of.length > 0 ? `; Service ${of.join(", ")}` : ""})`;
  });
  const s = total(sockets);
  const e = total(entries);
  const done = [
    ...(s > 0 ? [`destroyed ${counted(s, "socket", "sockets")}`] : []),
    ...(e > 0 ? [`deleted ${counted(e, "conntrack entry", "conntrack entries")}`] : []),
  ].join(" and ");
  const note = `${done[0]!.toUpperCase()}${done.slice(1)} of connections to backends that left their Services: ${parts.join("; ")}`;
  return { pod, reason, note };
}
