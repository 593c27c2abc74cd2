/**
 * What one EndpointSlice says, read from the raw JSON the API server sent — untrusted input: any
 * field may be missing, null or of the wrong type. The result is compact (the only copy of a slice
 * the agent keeps): its id, resourceVersion, Service, and the keys of the backends it lists as
 * serving (every address of every serving endpoint times every port of a protocol the agent acts
 * on), with those that are also terminating apart. Whatever names nothing to act on is skipped
 * with a reason, never thrown.
 *
 * Serving, as the API defines the conditions (discovery.k8s.io/v1 EndpointConditions):
 * - `ready`: "A nil value indicates an unknown state. In most cases consumers should interpret this
 *   unknown state as ready."
 * - `serving`: "identical to ready except that it is set regardless of the terminating state of
 *   endpoints ... If nil, consumers should defer to the ready condition."
 * - `terminating`: "A nil value ... should [be interpreted] to mean that the endpoint is not
 *   terminating."
 * So an endpoint serves when `serving` says so, else when `ready` does, else (neither set) it does.
 * kube-proxy reads an absent `serving` as true, but routes endpoints that are not terminating by
 * `ready`: the API's chain agrees with what kube-proxy routes to in both cases, where kube-proxy's
 * own reading would keep live an endpoint with ready=false and no `serving` (a controller older
 * than the condition), to which kube-proxy sends nothing. An endpoint that does not serve is no
 * backend to keep clients for: only its pod is noted.
 *
 * Beside the backends, a slice says what kube-proxy needs to choose among them (KEP-1669): the
 * groups its ports are in (kube-proxy's Service port: Service, port name, protocol and IP family),
 * how many of its endpoints are ready (serving and not terminating), and which pod lists each
 * terminating or not serving endpoint (targetRef.uid), so that an address taken by another pod is
 * told from its old pod still leaving.
 */
import { isIPv4, isIPv6 } from "node:net";
import { type AgentProtocol, type BackendKey, backendKey, canonicalAddress, isValidPort } from "./backend.js";

/** The label that ties a slice to its Service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** Why part of a slice was skipped; a small fixed set (a metric label). */
export type SkipReason = "metadata" | "addressType" | "ports" | "port" | "protocol" | "endpoint" | "address";

/** One skipped part: why, and what it was. */
export interface Skip {
  reason: SkipReason;
  detail: string;
}

/** A slice as the agent keeps it. */
export interface SliceContent {
  /** "namespace/name". */
  id: string;
  /** The object's resourceVersion ("" when it has none): unchanged slices are not read again. */
  resourceVersion: string;
  /** "namespace/service" of its Service; undefined for a slice without the service-name label. */
  service: string | undefined;
  /** The keys of the serving backends, each once, in the order met. */
  keys: BackendKey[];
  /** The groups of the ports read ("ns/service dns UDP IPv4"), each once. */
  groups: string[];
  /** How many endpoints with an address read are ready: serving and not terminating. */
  ready: number;
  /**
   * The keys every serving listing of which says terminating, each with the groups of its
   * listings; undefined when none.
   */
  terminating: Map<BackendKey, string[]> | undefined;
  /**
   * The listings that do not make a backend ready (terminating, or not serving): the key and the
   * pod's uid ("" without a targetRef); undefined when none.
   */
  notReady: NotReady[] | undefined;
  /** Some part was skipped (logged once per version: the slice is kept to remember it). */
  skipped?: true;
}

/**
 * Whether a slice lists nothing the agent acts on (a TCP-only Service when it acts on UDP) and had
 * nothing skipped: it is not kept, and costs nothing.
 */
export function listsNothing(slice: SliceContent): boolean {
  return slice.keys.length === 0 && slice.notReady === undefined && !slice.skipped;
}

/** A listing that does not make its backend ready, and the pod it is of. */
export interface NotReady {
  key: BackendKey;
  pod: string;
}

/** A slice read: its content (undefined when the object names no slice) and what was skipped. */
export interface SliceRead {
  content: SliceContent | undefined;
  skipped: Skip[];
}

const PROTOCOLS = new Set(["TCP", "UDP", "SCTP"]);

type Json = Record<string, unknown>;
const isObject = (v: unknown): v is Json => typeof v === "object" && v !== null && !Array.isArray(v);
const show = (v: unknown): string => (v === undefined ? "absent" : JSON.stringify(v));

/** The identity of a raw object: "namespace/name", or undefined when its metadata does not name one. */
export function objectId(raw: unknown): { id: string; resourceVersion: string } | undefined {
  const metadata = isObject(raw) ? raw.metadata : undefined;
  if (!isObject(metadata)) return undefined;
  const { namespace, name, resourceVersion } = metadata;
  if (typeof namespace !== "string" || namespace === "" || typeof name !== "string" || name === "")
    return undefined;
  return {
    id: `${namespace}/${name}`,
    resourceVersion: typeof resourceVersion === "string" ? resourceVersion : "",
  };
}

/**
 * Read a raw slice. Ports of protocols outside `protocols` (SCTP always) are ignored; a port without
 * a valid number (1-65535; absent means "all ports", headless), an unknown protocol, an endpoint or
 * address that is not one, a family other than the slice's, and FQDN slices are skipped with a
 * reason. Endpoints that do not serve list no backend (only their pods are noted). An absent or
 * non-boolean `terminating` takes the API's default: not terminating.
 */
export function readSlice(raw: unknown, protocols: ReadonlySet<AgentProtocol>): SliceRead {
  const read = readParts(raw, protocols);
  if (read.content && read.skipped.length > 0) read.content.skipped = true;
  return read;
}

function readParts(raw: unknown, protocols: ReadonlySet<AgentProtocol>): SliceRead {
  const skipped: Skip[] = [];
  const identity = objectId(raw);
  if (!identity) {
    skipped.push({ reason: "metadata", detail: "no metadata with a namespace and a name" });
    return { content: undefined, skipped };
  }
  const slice = raw as Json;
  const metadata = slice.metadata as Json;
  const labels = isObject(metadata.labels) ? metadata.labels : {};
  const serviceName = labels[SERVICE_NAME_LABEL];
  const content: SliceContent = {
    id: flat(identity.id),
    resourceVersion: identity.resourceVersion,
    service:
      typeof serviceName === "string" && serviceName !== ""
        ? flat(`${metadata.namespace as string}/${serviceName}`)
        : undefined,
    keys: [],
    groups: [],
    ready: 0,
    terminating: undefined,
    notReady: undefined,
  };
  const family = slice.addressType;
  if (family !== "IPv4" && family !== "IPv6") {
    skipped.push({ reason: "addressType", detail: `addressType ${show(family)}` });
    return { content, skipped };
  }
  const ports = readPorts(slice.ports, protocols, skipped);
  if (ports.length === 0) return { content, skipped };
  const service = content.service ?? `(slice ${content.id})`;
  for (const port of ports) {
    port.group = flat(`${service} ${port.name} ${port.protocol.toUpperCase()} ${family}`);
    if (!content.groups.includes(port.group)) content.groups.push(port.group);
  }
  const isFamily = family === "IPv4" ? isIPv4 : isIPv6;
  const seen = new Map<BackendKey, boolean>();
  const terminatingIn = new Map<BackendKey, string[]>();
  const notReady: NotReady[] = [];
  const endpoints = Array.isArray(slice.endpoints) ? slice.endpoints : [];
  if (slice.endpoints !== undefined && slice.endpoints !== null && !Array.isArray(slice.endpoints))
    skipped.push({ reason: "endpoint", detail: `endpoints ${show(slice.endpoints)}` });
  for (const endpoint of endpoints) {
    if (!isObject(endpoint) || !Array.isArray(endpoint.addresses)) {
      skipped.push({ reason: "endpoint", detail: `endpoint ${show(endpoint)}` });
      continue;
    }
    const conditions = isObject(endpoint.conditions) ? endpoint.conditions : {};
    const serving = serves(conditions);
    const terminating = conditions.terminating === true;
    let read = false;
    for (const address of endpoint.addresses) {
      const canonical =
        typeof address === "string" && isFamily(address) ? canonicalAddress(address) : undefined;
      if (canonical === undefined) {
        skipped.push({
          reason: "address",
          detail: `address ${show(address)} is not an ${family} address a backend can have`,
        });
        continue;
      }
      read = true;
      for (const { port, protocol, group: portGroup } of ports) {
        const key = backendKey({ address: canonical, port, protocol });
        if (!serving || terminating) notReady.push({ key, pod: podOf(endpoint) });
        if (!serving) continue;
        // An address listed twice in one slice: terminating only if every listing says so.
        const before = seen.get(key);
        if (before === undefined) content.keys.push(key);
        seen.set(key, terminating && (before ?? true));
        if (terminating) terminatingIn.set(key, [...(terminatingIn.get(key) ?? []), portGroup]);
      }
    }
    if (read && serving && !terminating) content.ready++;
  }
  const terminating = [...seen]
    .filter(([, t]) => t)
    .map(([key]): [BackendKey, string[]] => [key, terminatingIn.get(key)!]);
  // Copies of exactly their length: an array grown by push keeps room for more (17 at first).
  content.keys = content.keys.slice();
  content.groups = content.groups.slice();
  if (terminating.length > 0) content.terminating = new Map(terminating);
  if (notReady.length > 0) content.notReady = notReady;
  return { content, skipped };
}

/** The uid of the pod an endpoint is of (its targetRef), "" when it names none. */
function podOf(endpoint: Json): string {
  const ref = endpoint.targetRef;
  return isObject(ref) && typeof ref.uid === "string" ? ref.uid : "";
}

/** Whether an endpoint serves: `serving`, else `ready`, else true (a non-boolean counts as absent). */
function serves(conditions: Json): boolean {
  if (typeof conditions.serving === "boolean") return conditions.serving;
  if (typeof conditions.ready === "boolean") return conditions.ready;
  return true;
}

/** A port read; its group is filled in once the slice's family is known. */
interface SlicePort {
  port: number;
  protocol: AgentProtocol;
  name: string;
  group: string;
}

function readPorts(raw: unknown, protocols: ReadonlySet<AgentProtocol>, skipped: Skip[]): SlicePort[] {
  const list = Array.isArray(raw) ? raw : [];
  if (list.length === 0) {
    skipped.push({
      reason: "ports",
      detail: raw === undefined || Array.isArray(raw) ? "no ports" : `ports ${show(raw)}`,
    });
    return [];
  }
  const ports: SlicePort[] = [];
  for (const p of list) {
    if (!isObject(p)) {
      skipped.push({ reason: "port", detail: `port ${show(p)}` });
      continue;
    }
    const protocol = p.protocol ?? "TCP";
    if (typeof protocol !== "string" || !PROTOCOLS.has(protocol)) {
      skipped.push({ reason: "protocol", detail: `port ${show(p.name)}: protocol ${show(p.protocol)}` });
      continue;
    }
    const lower = protocol.toLowerCase();
    if ((lower !== "udp" && lower !== "tcp") || !protocols.has(lower)) continue;
    if (!isValidPort(p.port)) {
      skipped.push({ reason: "port", detail: `port ${show(p.name)}: number ${show(p.port)}` });
      continue;
    }
    ports.push({ port: p.port, protocol: lower, name: typeof p.name === "string" ? p.name : "", group: "" });
  }
  return ports;
}

/**
 * The same text as one flat string. V8 keeps a string built by concatenation as a rope (holding its
 * parts, here the raw object's strings), and a Map that hashes a rope keeps it beside a flat copy.
 * normalize() returns its text flat (for ASCII text, unchanged).
 */
function flat(text: string): string {
  return text.normalize();
}
