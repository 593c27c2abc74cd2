/**
 * PodStore: the reflector's store for the Pods of this node (listed and watched with
 * fieldSelector=spec.nodeName=NODE), keeping of each only what names it in an Event — UID,
 * namespace and name — and its pod IPs, which say whose a conntrack entry's flow was (not a
 * host-network pod's: its IPs are the node's). Each raw object is untrusted input: one that is not
 * a Pod of this node with a UID, namespace and name of the API's forms is passed over, and so is
 * an IP that is not one.
 */
import { canonicalAddress } from "./backend.js";
import type { PodRef } from "./events.js";
import type { ReflectorStore, Replacement } from "./reflector.js";

/** A UID as the API server makes one (a static pod's: 32 hex digits). */
const UID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
/** A DNS subdomain (a Pod's name) or label (a namespace): at most 253 characters of these. */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The pods known, by UID and by pod IP. */
export interface PodIndex {
  pod(uid: string): PodRef | undefined;
  /** The pod (not host-network) whose IP this is, in canonical form. */
  podOfIp(ip: string): PodRef | undefined;
}

/** A pod as kept: its reference and its own IPs (none for a host-network pod). */
interface KeptPod extends PodRef {
  ips: readonly string[];
}

/** Pod IPs read of one Pod, at most (one per family; more is no Pod's). */
const MAX_IPS = 2;

export class PodStore implements ReflectorStore, PodIndex {
  private pods = new Map<string, KeptPod>();
  private byIp = new Map<string, string>();

  constructor(private readonly node: string) {}

  get size(): number {
    return this.pods.size;
  }

  pod(uid: string): PodRef | undefined {
    const pod = this.pods.get(uid);
    return pod && { uid: pod.uid, namespace: pod.namespace, name: pod.name };
  }

  podOfIp(ip: string): PodRef | undefined {
    const uid = this.byIp.get(ip);
    return uid === undefined ? undefined : this.pod(uid);
  }

  replacement(): Replacement {
    let staged: Map<string, KeptPod> | undefined = new Map();
    return {
      add: (raw) => {
        const pod = this.read(raw);
        if (pod) staged?.set(pod.uid, pod);
      },
      commit: async () => {
        if (staged) {
          this.pods = staged;
          this.byIp = new Map();
          for (const pod of staged.values()) for (const ip of pod.ips) this.byIp.set(ip, pod.uid);
        }
        staged = undefined;
      },
      abandon: () => {
        staged = undefined;
      },
    };
  }

  put(raw: unknown): void {
    const pod = this.read(raw);
    if (!pod) return;
    this.forget(pod.uid);
    this.pods.set(pod.uid, pod);
    for (const ip of pod.ips) this.byIp.set(ip, pod.uid);
  }

  delete(raw: unknown): void {
    const uid = (raw as { metadata?: { uid?: unknown } } | null)?.metadata?.uid;
    if (typeof uid === "string") this.forget(uid);
  }

  private forget(uid: string): void {
    for (const ip of this.pods.get(uid)?.ips ?? []) if (this.byIp.get(ip) === uid) this.byIp.delete(ip);
    this.pods.delete(uid);
  }

  /** The Pod as kept, or undefined when it is none of this node's or malformed. */
  private read(raw: unknown): KeptPod | undefined {
    if (typeof raw !== "object" || raw === null) return undefined;
    const { metadata, spec, status } = raw as Record<string, Record<string, unknown> | undefined>;
    const uid = metadata?.uid;
    const namespace = metadata?.namespace;
    const name = metadata?.name;
    if (spec?.nodeName !== this.node) return undefined;
    if (typeof uid !== "string" || !UID.test(uid)) return undefined;
    if (typeof namespace !== "string" || namespace.length > 63 || !NAME.test(namespace)) return undefined;
    if (typeof name !== "string" || !NAME.test(name)) return undefined;
    // Flat copies: the raw object's strings are not kept alive through slices of them.
    return {
      uid: flat(uid),
      namespace: flat(namespace),
      name: flat(name),
      ips: spec.hostNetwork === true ? [] : ipsOf(status),
    };
  }
}

/** status.podIPs (else status.podIP), canonical, each once; what is not an IP is passed over. */
function ipsOf(status: Record<string, unknown> | undefined): string[] {
  const listed = Array.isArray(status?.podIPs) ? status.podIPs.slice(0, MAX_IPS) : [];
  const texts = listed.map((p) => (p as { ip?: unknown } | null)?.ip);
  if (texts.length === 0) texts.push(status?.podIP);
  const ips = texts.flatMap((t) => (typeof t === "string" ? (canonicalAddress(t) ?? []) : []));
  return [...new Set(ips)];
}

function flat(s: string): string {
  return Buffer.from(s, "utf8").toString("utf8");
}
