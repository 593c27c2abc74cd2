/**
 * StandInApiServer: the only cluster the agent's tests have. An HTTPS server on 127.0.0.1 that
 * stores EndpointSlices and serves them as kube-apiserver does:
 * - list (cluster-wide or per namespace) answers the items and the store's resourceVersion;
 * - watch (?watch=true&resourceVersion=RV) replays every change after RV, then streams new ones as
 *   ADDED/MODIFIED/DELETED lines; "" or "0" starts with synthetic ADDED events for every object;
 *   BOOKMARK events only when the client asked for them (allowWatchBookmarks=true);
 * - an RV older than the compacted history answers an ERROR event with a 410 "Expired" Status, and
 *   the stream ends, as after etcd compaction;
 * - a bearer token is required (401 otherwise), and every watch response carries `Connection:
 *   close`, since the server may end it at any time.
 * Tests make the changes (apply, remove), and the failures: compaction, expiring open watches,
 * dropping connections, a partition that resets every new connection.
 */
import { EventEmitter, once } from "node:events";
import { writeFile } from "node:fs/promises";
import type { IncomingMessage, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { V1EndpointSlice } from "@kubernetes/client-node";
import { type Certificate, makeCertificate } from "./certificate.js";

const LIST_PATH = /^\/apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?endpointslices$/;

type EventType = "ADDED" | "MODIFIED" | "DELETED";

interface Change {
  rv: number;
  type: EventType;
  object: V1EndpointSlice;
}

interface OpenWatch {
  namespace: string | undefined;
  bookmarks: boolean;
  res: ServerResponse;
}

/** What a request asked; emitted as "list" and "watch" events for tests to await. */
export interface RequestSeen {
  namespace: string | undefined;
  resourceVersion: string | undefined;
  /** For a watch: whether it was answered 410 Expired. */
  expired?: boolean;
}

export class StandInApiServer extends EventEmitter {
  readonly token = `token-${process.pid}-${Date.now()}`;
  private readonly objects = new Map<string, V1EndpointSlice>();
  private history: Change[] = [];
  private rv = 1;
  /** Changes up to and including this RV are no longer in the history. */
  private compactedRv = 1;
  private uid = 0;
  private readonly watches = new Set<OpenWatch>();
  private readonly sockets = new Set<Socket>();
  private partitioned = false;
  /** Requests answered, by kind. */
  readonly counts = { list: 0, watch: 0, expired: 0, refused: 0 };

  private constructor(
    private readonly server: Server,
    readonly certificate: Certificate,
  ) {
    super();
  }

  /** Start on 127.0.0.1 with a fresh certificate; `close()` when done. */
  static async start(): Promise<StandInApiServer> {
    const certificate = await makeCertificate();
    const server = createServer({ cert: certificate.cert, key: certificate.key });
    const api = new StandInApiServer(server, certificate);
    server.on("connection", (socket: Socket) => api.onConnection(socket));
    server.on("request", (req: IncomingMessage, res: ServerResponse) => api.onRequest(req, res));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return api;
  }

  get url(): string {
    return `https://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  /** The store's current resourceVersion. */
  get resourceVersion(): string {
    return String(this.rv);
  }

  /** How many watch streams are open now. */
  get openWatches(): number {
    return this.watches.size;
  }

  /** Write a kubeconfig for this server (its CA, a bearer token) and return its path. */
  async writeKubeconfig(path: string): Promise<string> {
    const config = {
      apiVersion: "v1",
      kind: "Config",
      clusters: [
        {
          name: "stand-in",
          cluster: {
            server: this.url,
            "certificate-authority-data": Buffer.from(this.certificate.cert).toString("base64"),
          },
        },
      ],
      users: [{ name: "agent", user: { token: this.token } }],
      contexts: [{ name: "stand-in", context: { cluster: "stand-in", user: "agent" } }],
      "current-context": "stand-in",
    };
    await writeFile(path, JSON.stringify(config, null, 2));
    return path;
  }

  /** Create or replace a slice (ADDED or MODIFIED); returns it as stored. */
  apply(slice: V1EndpointSlice): V1EndpointSlice {
    const key = keyOf(slice);
    const old = this.objects.get(key);
    const rv = ++this.rv;
    const stored: V1EndpointSlice = structuredClone(slice);
    stored.apiVersion = "discovery.k8s.io/v1";
    stored.kind = "EndpointSlice";
    stored.metadata = {
      ...stored.metadata,
      uid: old?.metadata?.uid ?? `uid-${++this.uid}`,
      resourceVersion: String(rv),
      generation: (old?.metadata?.generation ?? 0) + 1,
      creationTimestamp: old?.metadata?.creationTimestamp ?? (new Date().toISOString() as unknown as Date),
    };
    this.objects.set(key, stored);
    this.record({ rv, type: old ? "MODIFIED" : "ADDED", object: stored });
    return stored;
  }

  /** Delete a slice (DELETED); false when there was none. */
  remove(namespace: string, name: string): boolean {
    const key = `${namespace}/${name}`;
    const old = this.objects.get(key);
    if (!old) return false;
    this.objects.delete(key);
    const rv = ++this.rv;
    const object = structuredClone(old);
    object.metadata = { ...object.metadata, resourceVersion: String(rv) };
    this.record({ rv, type: "DELETED", object });
    return true;
  }

  /** A write to some other resource: the store's resourceVersion moves on, no EndpointSlice event. */
  touch(): void {
    this.rv++;
  }

  /** Send a BOOKMARK with the current resourceVersion to every watch that asked for bookmarks. */
  bookmark(): void {
    const line = event("BOOKMARK", {
      apiVersion: "discovery.k8s.io/v1",
      kind: "EndpointSlice",
      metadata: { resourceVersion: this.resourceVersion },
    } as V1EndpointSlice);
    for (const w of this.watches) if (w.bookmarks) w.res.write(line);
  }

  /** Forget the history up to now: a watch from an older resourceVersion is answered 410. */
  compact(): void {
    this.history = [];
    this.compactedRv = this.rv;
  }

  /** End every open watch with an ERROR 410 Expired event, as the server does when it cannot serve it on. */
  expireWatches(): void {
    for (const w of this.watches) {
      w.res.end(expiredEvent(this.resourceVersion));
      this.counts.expired++;
    }
    this.watches.clear();
  }

  /** End every open watch cleanly (as the server's watch timeout does). */
  closeWatches(): void {
    for (const w of this.watches) w.res.end();
    this.watches.clear();
  }

  /** Reset every connection (open watches included) without a response end. */
  dropConnections(): void {
    this.watches.clear();
    for (const s of this.sockets) s.destroy();
  }

  /** While on, every new connection is reset at once, and open ones are dropped. */
  partition(on: boolean): void {
    this.partitioned = on;
    if (on) this.dropConnections();
  }

  /** Resolves at the next request of `kind` that matches. */
  async next(kind: "list" | "watch", match: (r: RequestSeen) => boolean = () => true): Promise<RequestSeen> {
    for (;;) {
      const [seen] = (await once(this, kind)) as [RequestSeen];
      if (match(seen)) return seen;
    }
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private onConnection(socket: Socket): void {
    if (this.partitioned) {
      this.counts.refused++;
      socket.destroy();
      return;
    }
    this.sockets.add(socket);
    socket.once("close", () => this.sockets.delete(socket));
  }

  private onRequest(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      status(res, 401, "Unauthorized", "Unauthorized");
      return;
    }
    const m = LIST_PATH.exec(url.pathname);
    if (!m) {
      status(res, 404, "NotFound", `the server could not find the requested resource ${url.pathname}`);
      return;
    }
    if (req.method !== "GET") {
      status(res, 405, "MethodNotAllowed", `${req.method} is not supported by the stand-in server`);
      return;
    }
    const namespace = m[1];
    const resourceVersion = url.searchParams.get("resourceVersion") ?? undefined;
    if (url.searchParams.get("watch") === "true") {
      this.watch(res, namespace, resourceVersion, url.searchParams.get("allowWatchBookmarks") === "true");
    } else {
      this.list(res, namespace, resourceVersion);
    }
  }

  private list(
    res: ServerResponse,
    namespace: string | undefined,
    resourceVersion: string | undefined,
  ): void {
    this.counts.list++;
    const items = [...this.objects.values()]
      .filter((o) => namespace === undefined || o.metadata?.namespace === namespace)
      .sort((a, b) => keyOf(a).localeCompare(keyOf(b)))
      // List items carry no apiVersion and kind; the list does.
      .map(({ apiVersion: _a, kind: _k, ...rest }) => rest);
    const body = JSON.stringify({
      kind: "EndpointSliceList",
      apiVersion: "discovery.k8s.io/v1",
      metadata: { resourceVersion: this.resourceVersion },
      items,
    });
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    res.end(body);
    this.emit("list", { namespace, resourceVersion } satisfies RequestSeen);
  }

  private watch(
    res: ServerResponse,
    namespace: string | undefined,
    resourceVersion: string | undefined,
    bookmarks: boolean,
  ): void {
    this.counts.watch++;
    res.writeHead(200, { "content-type": "application/json", connection: "close" });
    res.flushHeaders();
    const inScope = (o: V1EndpointSlice) => namespace === undefined || o.metadata?.namespace === namespace;
    const from =
      resourceVersion === undefined || resourceVersion === "" || resourceVersion === "0"
        ? undefined
        : Number(resourceVersion);
    if (from !== undefined && (!Number.isInteger(from) || from < this.compactedRv)) {
      res.end(expiredEvent(this.resourceVersion, resourceVersion));
      this.counts.expired++;
      this.emit("watch", { namespace, resourceVersion, expired: true } satisfies RequestSeen);
      return;
    }
    if (from === undefined) {
      for (const o of this.objects.values()) if (inScope(o)) res.write(event("ADDED", o));
    } else {
      for (const c of this.history) if (c.rv > from && inScope(c.object)) res.write(event(c.type, c.object));
    }
    const w: OpenWatch = { namespace, bookmarks, res };
    this.watches.add(w);
    res.once("close", () => this.watches.delete(w));
    this.emit("watch", { namespace, resourceVersion } satisfies RequestSeen);
  }

  private record(change: Change): void {
    this.history.push(change);
    const line = event(change.type, change.object);
    for (const w of this.watches)
      if (w.namespace === undefined || w.namespace === change.object.metadata?.namespace) w.res.write(line);
  }
}

function keyOf(o: V1EndpointSlice): string {
  return `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
}

function event(type: EventType | "BOOKMARK", object: V1EndpointSlice): string {
  return `${JSON.stringify({ type, object })}\n`;
}

function expiredEvent(current: string, asked?: string): string {
  const object = {
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: `too old resource version: ${asked ?? "(open watch)"} (${current})`,
    reason: "Expired",
    code: 410,
  };
  return `${JSON.stringify({ type: "ERROR", object })}\n`;
}

function status(res: ServerResponse, code: number, reason: string, message: string): void {
  const body = JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message,
    reason,
    code,
  });
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
}
