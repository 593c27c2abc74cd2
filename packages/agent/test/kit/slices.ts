/**
 * EndpointSlice objects for tests, shaped as the API server stores them (discovery.k8s.io/v1).
 */
import type { V1EndpointSlice } from "@kubernetes/client-node";

export interface EndpointSpec {
  addresses: string[];
  /** Absent conditions are absent in the object (the API's defaults apply). */
  ready?: boolean;
  serving?: boolean;
  terminating?: boolean;
  nodeName?: string;
  /** The uid of the pod it is of (targetRef); absent: no targetRef. */
  pod?: string;
}

export interface PortSpec {
  port?: number;
  protocol?: "UDP" | "TCP" | "SCTP";
  name?: string;
}

export interface SliceSpec {
  namespace?: string;
  name: string;
  /** The Service (label kubernetes.io/service-name); absent: no label. */
  service?: string;
  addressType?: "IPv4" | "IPv6" | "FQDN";
  ports: PortSpec[];
  endpoints: EndpointSpec[];
}

/** An EndpointSlice as a client writes it (the server fills uid, resourceVersion, ...). */
export function endpointSlice(spec: SliceSpec): V1EndpointSlice {
  return {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: {
      name: spec.name,
      namespace: spec.namespace ?? "default",
      labels: {
        ...(spec.service ? { "kubernetes.io/service-name": spec.service } : {}),
        "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
      },
    },
    addressType: spec.addressType ?? "IPv4",
    endpoints: spec.endpoints.map((e) => {
      const conditions: Record<string, boolean> = {};
      for (const k of ["ready", "serving", "terminating"] as const)
        if (e[k] !== undefined) conditions[k] = e[k];
      return {
        addresses: e.addresses,
        conditions,
        ...(e.nodeName ? { nodeName: e.nodeName } : {}),
        ...(e.pod ? { targetRef: { kind: "Pod", namespace: spec.namespace ?? "default", uid: e.pod } } : {}),
      };
    }),
    ports: spec.ports.map((p) => ({
      ...(p.name !== undefined ? { name: p.name } : {}),
      ...(p.port !== undefined ? { port: p.port } : {}),
      protocol: p.protocol ?? "TCP",
    })),
  };
}

/** A one-port UDP slice of Service `service` with the given ready endpoints. */
export function udpSlice(
  name: string,
  service: string,
  port: number,
  addresses: string[],
  namespace = "default",
): V1EndpointSlice {
  return endpointSlice({
    namespace,
    name,
    service,
    ports: [{ name: "dns", port, protocol: "UDP" }],
    endpoints: addresses.map((a) => ({ addresses: [a], ready: true, serving: true, terminating: false })),
  });
}
