/**
 * PodEvents: what a batch destroyed, told to the pods that held it — one Event per pod, naming
 * the backends, their Services and the counts — and logged with the pod's namespace/name beside
 * its UID. A pod this node's Pod watch does not know (yet) gets no Event, only the log line.
 */
import type { Logger } from "pino";
import type { LateCheck } from "./aftercare.js";
import { keyText } from "./backend.js";
import type { EventRecorder, PodHappening } from "./events.js";
import type { PodIndex } from "./pods.js";
import type { PodSockets } from "./socket-pods.js";

export class PodEvents {
  constructor(
    private readonly recorder: EventRecorder,
    private readonly pods: PodIndex,
    private readonly logger: Logger,
  ) {}

  /** The batch of `backends` destroyed the sockets of `destroyed`: queue their Events. */
  tell(backends: readonly LateCheck[], destroyed: readonly PodSockets[]): void {
    const services = new Map(backends.map((b) => [keyText(b.key), b.services]));
    for (const { uid, backends: counts } of destroyed) {
      const pod = this.pods.pod(uid);
      const sockets = [...counts.values()].reduce((a, b) => a + b, 0);
      this.logger.info(
        {
          pod: pod ? `${pod.namespace}/${pod.name}` : undefined,
          uid,
          sockets,
          backends: Object.fromEntries(counts),
        },
        "pod sockets destroyed",
      );
      if (pod) this.recorder.record(happening(pod, counts, services));
    }
  }

  stop(): Promise<void> {
    return this.recorder.stop();
  }
}

/** The reason (by the protocols of the sockets) and the note of one pod's Event. */
function happening(
  pod: PodHappening["pod"],
  counts: ReadonlyMap<string, number>,
  services: ReadonlyMap<string, readonly string[]>,
): PodHappening {
  const keys = [...counts.keys()].sort();
  const protocols = new Set(keys.map((k) => k.slice(k.lastIndexOf("/") + 1)));
  const reason =
    protocols.size > 1
      ? "ConnectionsTerminated"
      : protocols.has("tcp")
        ? "TCPConnectionsTerminated"
        : "UDPConnectionsTerminated";
  const total = [...counts.values()].reduce((a, b) => a + b, 0);
  const parts = keys.map((k) => {
    const of = services.get(k) ?? [];
    return `${k} (${counts.get(k)}${of.length > 0 ? `; Service ${of.join(", ")}` : ""})`;
  });
  const note = `Destroyed ${total} socket${total === 1 ? "" : "s"} connected to backends that left their Services: ${parts.join("; ")}`;
  return { pod, reason, note };
}
