/**
 * SliceWatch: EndpointSlices of every namespace through @kubernetes/client-node's informer (list,
 * then watch from the list's resourceVersion with bookmarks; on "410 Gone" it lists again and
 * reports the difference as adds, updates and deletes). The informer stops on any other error; this
 * wrapper starts it again with a capped exponential back-off, from the last resourceVersion it saw,
 * so that a dropped connection loses no event.
 */
import {
  DiscoveryV1Api,
  type Informer,
  type KubeConfig,
  type ListPromise,
  ListWatch,
  makeInformer,
  type ObjectCache,
  type V1EndpointSlice,
} from "@kubernetes/client-node";

/** The cluster-wide list/watch path; the informer adds watch=true and resourceVersion. */
export const ENDPOINTSLICES_PATH = "/apis/discovery.k8s.io/v1/endpointslices?allowWatchBookmarks=true";

export interface SliceWatchEvents {
  put(slice: V1EndpointSlice): void;
  delete(slice: V1EndpointSlice): void;
  /** After every complete list (the first one, and each re-list after 410), once its items were reported. */
  listed(count: number): void;
  /** A failed list or watch; the watch starts again after `delayMs`. */
  error(err: unknown, delayMs: number): void;
  /** The watch was started again (after an error, a 410 or a connection the server closed). */
  restarted(): void;
}

export interface SliceWatchOptions {
  /** First delay before starting again after an error; doubles up to `maxRestartDelayMs`. Default 500. */
  restartDelayMs?: number;
  /** Default 30,000. */
  maxRestartDelayMs?: number;
  /** How long the watch counts as alive after it was last connected. Default 60,000. */
  staleAfterMs?: number;
}

export class SliceWatch {
  private readonly informer: Informer<V1EndpointSlice> & ObjectCache<V1EndpointSlice>;
  private readonly restartDelayMs: number;
  private readonly maxRestartDelayMs: number;
  private readonly staleAfterMs: number;
  private failures = 0;
  private connects = 0;
  private connected = false;
  private lastAlive = performance.now();
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;

  constructor(
    kubeConfig: KubeConfig,
    private readonly events: SliceWatchEvents,
    options: SliceWatchOptions = {},
  ) {
    this.restartDelayMs = options.restartDelayMs ?? 500;
    this.maxRestartDelayMs = options.maxRestartDelayMs ?? 30_000;
    this.staleAfterMs = options.staleAfterMs ?? 60_000;
    const api = kubeConfig.makeApiClient(DiscoveryV1Api);
    const list: ListPromise<V1EndpointSlice> = async () => {
      const result = await api.listEndpointSliceForAllNamespaces();
      // The informer reports the list's items right after this promise settles, before any
      // macrotask: an immediate callback runs once they all are.
      setImmediate(() => this.events.listed(result.items.length));
      return result;
    };
    this.informer = makeInformer(kubeConfig, ENDPOINTSLICES_PATH, list);
    this.informer.on("add", (s) => this.events.put(s));
    this.informer.on("update", (s) => this.events.put(s));
    this.informer.on("delete", (s) => this.events.delete(s));
    this.informer.on("connect", () => {
      if (++this.connects > 1) this.events.restarted();
    });
    this.informer.on("error", (err) => this.onError(err));
  }

  /** Start listing and watching; resolves once the first attempt has connected or failed. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.attempt();
  }

  /** Stop watching; no event is reported after this resolves. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.connected = false;
    await this.informer.stop();
  }

  /** The resourceVersion the watch resumes from (the last event's or bookmark's); "" before the first list. */
  resourceVersion(): string {
    return this.informer instanceof ListWatch ? this.informer.latestResourceVersion() : "";
  }

  /** True while connected, and for `staleAfterMs` after the connection was last up. */
  alive(): boolean {
    if (this.stopped) return false;
    return this.connected || performance.now() - this.lastAlive < this.staleAfterMs;
  }

  private async attempt(): Promise<void> {
    const failuresBefore = this.failures;
    await this.informer.start();
    if (this.stopped || this.failures !== failuresBefore) return;
    this.connected = true;
    this.lastAlive = performance.now();
    this.failures = 0;
  }

  private onError(err: unknown): void {
    if (this.stopped) return;
    if (this.connected) this.lastAlive = performance.now();
    this.connected = false;
    const delayMs = Math.min(this.maxRestartDelayMs, this.restartDelayMs * 2 ** this.failures);
    this.failures++;
    this.events.error(err, delayMs);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      if (!this.stopped) void this.attempt();
    }, delayMs);
  }
}
