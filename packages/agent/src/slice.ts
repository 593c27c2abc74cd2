/**
 * What one EndpointSlice says: the Service it belongs to and its backends (every address of every
 * endpoint times every port of a protocol the agent acts on), each serving or terminating.
 */
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { type AgentBackend, type AgentProtocol, backendKey, canonicalAddress } from "./backend.js";

/** The label that ties a slice to its Service. */
export const SERVICE_NAME_LABEL = "kubernetes.io/service-name";

/** One backend of a slice. */
export interface SliceBackend {
  backend: AgentBackend;
  terminating: boolean;
}

/** A slice read for the agent. */
export interface SliceContent {
  /** "namespace/name" of the slice. */
  id: string;
  /** "namespace/service" of its Service; undefined for a slice without the service-name label. */
  service: string | undefined;
  /** By backend key. */
  backends: Map<string, SliceBackend>;
  /** Why parts of the slice name nothing to act on (FQDN, no port, bad address). */
  skipped: string[];
}

/** "namespace/name" of a slice (or of any namespaced object). */
export function sliceId(slice: V1EndpointSlice): string {
  return `${slice.metadata?.namespace ?? ""}/${slice.metadata?.name ?? ""}`;
}

/**
 * Read a slice. Ports of protocols outside `protocols` are ignored; a port entry without a number
 * (all ports, headless) and FQDN slices name nothing to act on and are noted in `skipped`. A
 * condition that is absent takes the API's default: not terminating.
 */
export function readSlice(slice: V1EndpointSlice, protocols: ReadonlySet<AgentProtocol>): SliceContent {
  const id = sliceId(slice);
  const labels = slice.metadata?.labels ?? {};
  const serviceName = labels[SERVICE_NAME_LABEL];
  const content: SliceContent = {
    id,
    service: serviceName ? `${slice.metadata?.namespace ?? ""}/${serviceName}` : undefined,
    backends: new Map(),
    skipped: [],
  };
  if (slice.addressType !== "IPv4" && slice.addressType !== "IPv6") {
    content.skipped.push(`addressType ${slice.addressType}`);
    return content;
  }
  const ports: { port: number; protocol: AgentProtocol }[] = [];
  for (const p of slice.ports ?? []) {
    const protocol = (p.protocol ?? "TCP").toLowerCase();
    if (protocol !== "udp" && protocol !== "tcp") continue;
    if (!protocols.has(protocol)) continue;
    if (typeof p.port !== "number") {
      content.skipped.push(`port ${p.name ?? "(unnamed)"} has no number`);
      continue;
    }
    ports.push({ port: p.port, protocol });
  }
  if ((slice.ports ?? []).length === 0) content.skipped.push("no ports");
  if (ports.length === 0) return content;
  for (const endpoint of slice.endpoints ?? []) {
    const terminating = endpoint.conditions?.terminating === true;
    for (const raw of endpoint.addresses ?? []) {
      const address = canonicalAddress(raw);
      if (address === undefined) {
        content.skipped.push(`address ${JSON.stringify(raw)} is not an IP address`);
        continue;
      }
      for (const { port, protocol } of ports) {
        const backend: AgentBackend = { address, port, protocol };
        const key = backendKey(backend);
        // One address listed twice in a slice: terminating only if every listing says so.
        const seen = content.backends.get(key);
        content.backends.set(key, { backend, terminating: terminating && (seen?.terminating ?? true) });
      }
    }
  }
  return content;
}
