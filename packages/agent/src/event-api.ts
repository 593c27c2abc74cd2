/**
 * EventApi: the two requests the agent makes of events.k8s.io/v1 — create an Event, and update
 * its series by a strategic merge patch, as client-go's EventSinkImpl does — over kube-api.ts's
 * apiRequest (the kubeconfig's server, RequestAuth's credentials).
 */
import type { KubeConfig } from "@kubernetes/client-node";
import type { EventObject, EventSeries, EventSink } from "./events.js";
import { apiRequest } from "./kube-api.js";
import type { RequestAuth } from "./request-auth.js";

const eventsPath = (namespace: string) =>
  `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`;

export class EventApi implements EventSink {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly auth: RequestAuth,
  ) {}

  async create(event: EventObject, signal: AbortSignal): Promise<void> {
    await this.send(
      "POST",
      eventsPath(event.metadata.namespace),
      { contentType: "application/json", value: event },
      signal,
    );
  }

  async patch(
    namespace: string,
    name: string,
    patch: { series: EventSeries },
    signal: AbortSignal,
  ): Promise<void> {
    await this.send(
      "PATCH",
      `${eventsPath(namespace)}/${encodeURIComponent(name)}`,
      { contentType: "application/strategic-merge-patch+json", value: patch },
      signal,
    );
  }

  /** The answer's body is not needed: it is read to its end and dropped. */
  private async send(
    method: string,
    path: string,
    body: { contentType: string; value: unknown },
    signal: AbortSignal,
  ): Promise<void> {
    const res = await apiRequest(this.kubeConfig, this.auth, { method, path, body }, signal);
    res.resume();
  }
}
