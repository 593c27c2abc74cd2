/**
 * PodStore: the reflector's store for the Pods of this node (listed and watched with
 * fieldSelector=spec.nodeName=NODE), keeping of each only what names it in an Event: UID,
 * namespace and name. Each raw object is untrusted input: one that is not a Pod of this node with
 * a UID, namespace and name of the API's forms is passed over.
 */
import type { PodRef } from "./events.js";
import type { ReflectorStore, Replacement } from "./reflector.js";

/** A UID as the API server makes one (a static pod's: 32 hex digits). */
const UID = /^(?:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9a-f]{32})$/;
/** A DNS subdomain (a Pod's name) or label (a namespace): at most 253 characters of these. */
const NAME = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;

/** The pods known, by UID. */
export interface PodIndex {
  pod(uid: string): PodRef | undefined;
}

export class PodStore implements ReflectorStore, PodIndex {
  private pods = new Map<string, PodRef>();

  constructor(private readonly node: string) {}

  get size(): number {
    return this.pods.size;
  }

  pod(uid: string): PodRef | undefined {
    return this.pods.get(uid);
  }

  replacement(): Replacement {
    let staged: Map<string, PodRef> | undefined = new Map();
    return {
      add: (raw) => {
        const pod = this.read(raw);
        if (pod) staged?.set(pod.uid, pod);
      },
      commit: async () => {
        if (staged) this.pods = staged;
        staged = undefined;
      },
      abandon: () => {
        staged = undefined;
      },
    };
  }

  put(raw: unknown): void {
    const pod = this.read(raw);
    if (pod) this.pods.set(pod.uid, pod);
  }

  delete(raw: unknown): void {
    const uid = (raw as { metadata?: { uid?: unknown } } | null)?.metadata?.uid;
    if (typeof uid === "string") this.pods.delete(uid);
  }

  /** The Pod's reference, or undefined when it is none of this node's or malformed. */
  private read(raw: unknown): PodRef | undefined {
    if (typeof raw !== "object" || raw === null) return undefined;
    const { metadata, spec } = raw as { metadata?: Record<string, unknown>; spec?: Record<string, unknown> };
    const uid = metadata?.uid;
    const namespace = metadata?.namespace;
    const name = metadata?.name;
    if (spec?.nodeName !== this.node) return undefined;
    if (typeof uid !== "string" || !UID.test(uid)) return undefined;
    if (typeof namespace !== "string" || namespace.length > 63 || !NAME.test(namespace)) return undefined;
    if (typeof name !== "string" || !NAME.test(name)) return undefined;
    // Flat copies: the raw object's strings are not kept alive through slices of them.
    return { uid: flat(uid), namespace: flat(namespace), name: flat(name) };
  }
}

function flat(s: string): string {
  return Buffer.from(s, "utf8").toString("utf8");
}
