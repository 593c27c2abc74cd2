/**
 * StandInApiServer: the only cluster the agent's tests have. An HTTPS server on 127.0.0.1 that
 * stores EndpointSlices and serves them as kube-apiserver does:
 * - list (cluster-wide or per namespace) answers the items, sorted by namespace/name as etcd keys
 *   are, and the store's resourceVersion; `limit` and `continue` page it from one snapshot, as
 *   kube-apiserver does with etcd (see {@link StandInApiServer.list});
 * - watch (?watch=true&resourceVersion=RV) replays every change after RV, then streams new ones as
 *   ADDED/MODIFIED/DELETED lines; "" or "0" starts with synthetic ADDED events for every object;
 *   BOOKMARK events only when the client asked for them (allowWatchBookmarks=true); the stream ends
 *   cleanly after `timeoutSeconds`;
 * - a streaming list (sendInitialEvents=true, KEP-3157) is refused with 422 as by a server without
 *   the WatchList feature, unless {@link StandInApiServer.streamingLists} is on: then it sends the
 *   current state as ADDED events, a BOOKMARK annotated `k8s.io/initial-events-end`, and goes on;
 * - an RV older than the compacted history answers an ERROR event with a 410 "Expired" Status, and
 *   the stream ends, as after etcd compaction;
 * - a bearer token is required (401 otherwise; {@link StandInApiServer.rotateToken} changes it),
 *   and every watch response carries `Connection: close`, since the server may end it at any time.
 * Every list and watch request is logged ({@link StandInApiServer.requests}). Tests make the changes
 * (apply, applyRaw, remove), and the failures: compaction, expiring open watches, dropping
 * connections, a partition, stalls, a black hole, error statuses, a 410 on every watch, a line cut
 * in half. {@link StandInApiServer.resetFaults} turns every fault off.
 */
import { EventEmitter, once } from "node:events";
import { writeFile } from "node:fs/promises";
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http";
import { createServer, type Server } from "node:https";
import type { AddressInfo, Socket } from "node:net";
import type { V1EndpointSlice, V1Pod } from "@kubernetes/client-node";
import { type Certificate, makeCertificate } from "./certificate.js";
import { arrival, listed } from "./waits.js";

/** The kinds of object the server stores, as their paths name them. */
export type Resource = "endpointslices" | "pods";

const LIST_PATHS: readonly [Resource, RegExp][] = [
  ["endpointslices", /^\/apis\/discovery\.k8s\.io\/v1\/(?:namespaces\/([^/]+)\/)?endpointslices$/],
  ["pods", /^\/api\/v1\/(?:namespaces\/([^/]+)\/)?pods$/],
];

/** An Event's path: POST to the collection, PATCH to one by name. */
const EVENTS_PATH = /^\/apis\/events\.k8s\.io\/v1\/namespaces\/([^/]+)\/events(?:\/([^/]+))?$/;
/** The API's limits on an Event's fields (pkg/apis/core/validation/events.go). */
const EVENT_FIELD_LIMIT = 128;
const EVENT_NOTE_LIMIT = 1024;

/** The version kube-apiserver writes into its continue tokens. */
const CONTINUE_VERSION = "meta.k8s.io/v1";
const CONTINUE_EXPIRED =
  "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.";
/**
 * Paged-list snapshots kept at once. etcd can read any revision since compaction; the stand-in
 * keeps the snapshots of recent paged lists instead, so a bounded number of them.
 */
const MAX_SNAPSHOTS = 32;

/** The two kinds of request the server answers. */
export type RequestKind = "list" | "watch";
/** What a fault applies to: one kind of request, or both. */
export type RequestKinds = RequestKind | "both";

/**
 * How a request was answered, decided when it arrived:
 * - "ok": served (a watch: its stream started);
 * - "expired": 410 Expired (a watch: the ERROR event; a list: the Status);
 * - "stalled": held with no response at all ({@link StandInApiServer.stall});
 * - "blackholed": a watch whose headers were sent and nothing more ({@link StandInApiServer.blackhole});
 * - "cut": the response was cut in half ({@link StandInApiServer.cut}): a list's body, or a line of
 *   the events a watch starts with (a line cut later leaves the watch's answer "ok");
 * - "status NNN": any other error Status, the injected ones and the server's own (400, 401, 504).
 * Connections refused by a partition carry no request, so they are not logged (see counts.refused).
 */
export type Answer = "ok" | "expired" | "stalled" | "blackholed" | "cut" | `status ${number}`;

/** A list or watch request as it arrived and how it was answered; emitted as "list" and "watch" events. */
export interface RequestSeen {
  /** performance.now() when the request arrived. */
  at: number;
  kind: RequestKind;
  resource: Resource;
  namespace: string | undefined;
  /** The node of a `fieldSelector=spec.nodeName=NODE` (the only field selector served). */
  node: string | undefined;
  fieldSelector: string | undefined;
  resourceVersion: string | undefined;
  /** The `limit` asked (NaN when not a number). */
  limit: number | undefined;
  continue: string | undefined;
  /** The `timeoutSeconds` asked (NaN when not a number); lists ignore it. */
  timeoutSeconds: number | undefined;
  allowWatchBookmarks: boolean;
  sendInitialEvents: boolean;
  resourceVersionMatch: string | undefined;
  answer: Answer;
  /** True when answered 410 Expired (answer "expired"); absent otherwise. */
  expired?: true;
}

/** An HTTP request as it reached the server: its method and URL. */
export interface HttpCall {
  method: string;
  url: URL;
}

/** An Event request (POST or PATCH) as it arrived, and how it was answered. */
export interface EventCall {
  method: string;
  namespace: string;
  /** The Event's name in a PATCH's path. */
  name: string | undefined;
  contentType: string | undefined;
  body: unknown;
  answer: Answer;
}

/** An error Status to answer with ({@link StandInApiServer.fail}). */
export interface StatusFailure {
  /** The HTTP status, e.g. 500, 503, 429. */
  code: number;
  /** How many requests to fail (0: none); absent: every one until turned off. */
  times?: number;
  /** Sent as Retry-After and in the Status details; 429 defaults to 1 s, as kube-apiserver does. */
  retryAfterSeconds?: number;
  message?: string;
}

type EventType = "ADDED" | "MODIFIED" | "DELETED";

/** A stored object: `object` is what watch events carry, `item` what lists carry. */
interface Entry {
  /** namespace/name: the etcd key's order, and the identity (raw objects may have no metadata). */
  readonly key: string;
  readonly resource: Resource;
  readonly namespace: string;
  /** A Pod's spec.nodeName. */
  readonly node?: string | undefined;
  readonly object: unknown;
  readonly item: unknown;
  readonly raw: boolean;
}

interface Change {
  rv: number;
  type: EventType;
  resource: Resource;
  namespace: string;
  node?: string | undefined;
  object: unknown;
}

/** What a list or watch covers: one kind of object, in one namespace or all, on one node or all. */
interface Scope {
  resource: Resource;
  namespace: string | undefined;
  node: string | undefined;
}

interface OpenWatch {
  scope: Scope;
  bookmarks: boolean;
  res: ServerResponse;
  timer: NodeJS.Timeout | undefined;
}

/** A Status, as kube-apiserver answers a failed request. */
interface Status {
  code: number;
  reason?: string;
  message: string;
  details?: { retryAfterSeconds?: number; causes?: { reason: string; message: string }[] };
}

interface ListBody {
  kind: "EndpointSliceList" | "PodList";
  apiVersion: "discovery.k8s.io/v1" | "v1";
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: unknown[];
}

type Asked = Omit<RequestSeen, "answer" | "expired">;

export class StandInApiServer extends EventEmitter {
  private bearer = `token-${process.pid}-${Date.now()}`;
  private tokens = 0;
  private readonly objects = new Map<string, Entry>();
  /** Pods, by namespace/name, apart from the slices: keys are per resource. */
  private readonly pods = new Map<string, Entry>();
  private history: Change[] = [];
  private rv = 1;
  /** Changes up to and including this RV are no longer in the history. */
  private compactedRv = 1;
  private uid = 0;
  /** Sorted entries of paged lists, by snapshotKey; Map order is age order. */
  private readonly snapshots = new Map<string, readonly Entry[]>();
  private readonly watches = new Set<OpenWatch>();
  /** Watches in the black hole: open, and nothing is ever written to them again. */
  private readonly silent = new Set<ServerResponse>();
  /** Stalled requests, held with no response. */
  private readonly held = new Map<ServerResponse, RequestKind>();
  private readonly sockets = new Set<Socket>();
  private readonly log: RequestSeen[] = [];
  private partitioned = false;
  private blackholed = false;
  private expiring = false;
  private readonly stalls = new Set<RequestKind>();
  private readonly failures = new Map<RequestKind, { failure: StatusFailure; left: number }>();
  private readonly cuts = new Set<RequestKind>();
  /**
   * Requests by kind, counted when they arrive, whatever the answer; `expired`: watches answered
   * 410; `refused`: connections reset by a partition.
   */
  readonly counts = { list: 0, watch: 0, expired: 0, refused: 0 };
  /** Every HTTP request that reached the server, whatever it asked and however it was answered. */
  readonly calls: HttpCall[] = [];
  /** Events created and patched, by namespace/name, as stored. */
  readonly events = new Map<string, Record<string, unknown>>();
  /** Every Event request, in arrival order; each is emitted as "event-call" once answered. */
  readonly eventCalls: EventCall[] = [];
  private stallingEvents = false;
  private readonly heldEvents = new Set<ServerResponse>();
  private eventFailure: { failure: StatusFailure; left: number } | undefined;
  /** Serve streaming lists (KEP-3157), as a server with the WatchList feature does; off: 422. */
  streamingLists = false;
  /** The size of the next list answer, when a flood is armed ({@link StandInApiServer.flood}). */
  private floodBytes: number | undefined;
  /** Bytes of list items written by floods so far (what reached the socket, roughly). */
  floodWritten = 0;

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

  /** How many watch streams are open now, those in the black hole included. */
  get openWatches(): number {
    return this.watches.size + this.silent.size;
  }

  /** Every list and watch request so far, in arrival order. */
  get requests(): readonly RequestSeen[] {
    return this.log;
  }

  /** The bearer token requests must carry. */
  get token(): string {
    return this.bearer;
  }

  /** Require a new token from now on (the old one is answered 401); returns it. */
  rotateToken(): string {
    this.bearer = `token-${process.pid}-${Date.now()}-${++this.tokens}`;
    return this.bearer;
  }

  /**
   * Write a kubeconfig for this server (its CA; the user's section `user`, by default the bearer
   * token) and return its path.
   */
  async writeKubeconfig(
    path: string,
    user: Record<string, unknown> = { token: this.token },
  ): Promise<string> {
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
      users: [{ name: "agent", user }],
      contexts: [{ name: "stand-in", context: { cluster: "stand-in", user: "agent" } }],
      "current-context": "stand-in",
    };
    await writeFile(path, JSON.stringify(config, null, 2));
    return path;
  }

  /**
   * Create or replace a slice (ADDED or MODIFIED); returns it as stored, deeply frozen: stored
   * objects are replaced, never changed, so list snapshots can hold references to them.
   */
  apply(slice: V1EndpointSlice): V1EndpointSlice {
    const key = keyOf(slice);
    const old = this.objects.get(key)?.object as V1EndpointSlice | undefined;
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
    deepFreeze(stored);
    // List items carry no apiVersion and kind; the list does.
    const { apiVersion: _a, kind: _k, ...item } = stored;
    const namespace = stored.metadata.namespace ?? "";
    this.put(
      { key, resource: "endpointslices", namespace, object: stored, item: Object.freeze(item), raw: false },
      rv,
    );
    return stored;
  }

  /** Create or replace a Pod (ADDED or MODIFIED); returns it as stored, deeply frozen. */
  applyPod(pod: V1Pod): V1Pod {
    const key = `${pod.metadata?.namespace ?? ""}/${pod.metadata?.name ?? ""}`;
    const old = this.pods.get(key)?.object as V1Pod | undefined;
    const rv = ++this.rv;
    const stored: V1Pod = structuredClone(pod);
    stored.apiVersion = "v1";
    stored.kind = "Pod";
    stored.metadata = {
      ...stored.metadata,
      uid: stored.metadata?.uid ?? old?.metadata?.uid ?? `uid-${++this.uid}`,
      resourceVersion: String(rv),
    };
    deepFreeze(stored);
    const { apiVersion: _a, kind: _k, ...item } = stored;
    const entry: Entry = {
      key,
      resource: "pods",
      namespace: stored.metadata?.namespace ?? "",
      node: stored.spec?.nodeName,
      object: stored,
      item: Object.freeze(item),
      raw: false,
    };
    this.put(entry, rv);
    return stored;
  }

  /** Delete a Pod (DELETED); false when there was none. */
  removePod(namespace: string, name: string): boolean {
    const key = `${namespace}/${name}`;
    const old = this.pods.get(key);
    if (!old) return false;
    this.pods.delete(key);
    const rv = ++this.rv;
    const object = {
      ...(old.object as V1Pod),
      metadata: { ...(old.object as V1Pod).metadata, resourceVersion: String(rv) },
    };
    this.record({ rv, type: "DELETED", resource: "pods", namespace, node: old.node, object });
    return true;
  }

  /**
   * Store any JSON value as the object `namespace/name` (ADDED or MODIFIED), as a malformed object
   * would come from a real server: lists and watch events carry it exactly as given, with no
   * apiVersion, kind or metadata added. The store's resourceVersion advances; `remove(namespace,
   * name)` deletes it, its DELETED event carrying the same value. Returns the change's resourceVersion.
   */
  applyRaw(namespace: string, name: string, object: unknown): string {
    const value = deepFreeze(structuredClone(object));
    const rv = ++this.rv;
    this.put(
      {
        key: `${namespace}/${name}`,
        resource: "endpointslices",
        namespace,
        object: value,
        item: value,
        raw: true,
      },
      rv,
    );
    return String(rv);
  }

  /** Delete a slice or raw object (DELETED); false when there was none. */
  remove(namespace: string, name: string): boolean {
    const key = `${namespace}/${name}`;
    const old = this.objects.get(key);
    if (!old) return false;
    this.objects.delete(key);
    const rv = ++this.rv;
    const object = old.raw ? old.object : deletedSlice(old.object as V1EndpointSlice, rv);
    this.record({ rv, type: "DELETED", resource: "endpointslices", namespace: old.namespace, object });
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
    });
    for (const w of this.watches) if (w.bookmarks) this.send(w, line);
  }

  /**
   * Forget the history up to now: a watch from an older resourceVersion is answered 410. The kept
   * list snapshots go too, so a continue token made before is answered 410, unless its
   * resourceVersion is still the current one (the current state is that snapshot).
   */
  compact(): void {
    this.history = [];
    this.compactedRv = this.rv;
    this.snapshots.clear();
  }

  /**
   * End every open watch with an ERROR 410 Expired event, as the server does when it cannot serve it
   * on. Watches in the black hole get nothing, as nothing gets through it.
   */
  expireWatches(): void {
    for (const w of this.watches) {
      this.endWatch(w, expiredEvent(this.resourceVersion));
      this.counts.expired++;
    }
  }

  /** End every open watch cleanly (as the server's watch timeout does); not those in the black hole. */
  closeWatches(): void {
    for (const w of this.watches) this.endWatch(w);
  }

  /** Reset every connection (open, stalled and black-holed requests included) without a response end. */
  dropConnections(): void {
    this.watches.clear();
    this.silent.clear();
    this.held.clear();
    for (const s of this.sockets) s.destroy();
  }

  /** While on, every new connection is reset at once, and open ones are dropped. */
  partition(on: boolean): void {
    this.partitioned = on;
    if (on) this.dropConnections();
  }

  /**
   * While on, requests of `kinds` get no response at all, not even headers: each connection stays
   * open until the client gives up, the server closes, or the stall is turned off for its kind,
   * which resets the held connections (a server that never answers them).
   */
  stall(kinds: RequestKinds, on = true): void {
    for (const kind of kindsOf(kinds)) {
      if (on) {
        this.stalls.add(kind);
        continue;
      }
      this.stalls.delete(kind);
      for (const [res, k] of this.held) if (k === kind) res.destroy();
    }
  }

  /**
   * While on, a stuck proxy between client and server: open watches, and new ones after their
   * headers, receive nothing more (no events, no bookmarks, no end at timeoutSeconds, no expiry),
   * while the store keeps changing. Turning it off lets new watches through; those already in the
   * black hole stay silent until the client gives up or the connections are dropped. A new watch
   * from its last resourceVersion catches up as usual. Lists are not affected.
   */
  blackhole(on = true): void {
    this.blackholed = on;
    if (!on) return;
    for (const w of this.watches) {
      clearTimeout(w.timer);
      this.hide(w.res);
    }
    this.watches.clear();
  }

  /**
   * Answer requests of `kinds` with an error Status instead (`failure.times` of them, or all until
   * `fail(kinds, false)`): reason InternalError for 500, ServiceUnavailable for 503, TooManyRequests
   * for 429 (with Retry-After), and so on. Checked after a stall, before anything else.
   */
  fail(kinds: RequestKinds, failure: StatusFailure | false): void {
    for (const kind of kindsOf(kinds)) {
      const left = failure ? (failure.times ?? Number.POSITIVE_INFINITY) : 0;
      if (failure && left > 0) this.failures.set(kind, { failure, left });
      else this.failures.delete(kind);
    }
  }

  /**
   * While on, every watch is answered 410, as by a server whose watch cache is broken: the open
   * ones at once (as `expireWatches()`), each new one with headers, an ERROR event with a 410
   * Expired Status, and the end of the stream, whatever its resourceVersion.
   */
  expireEveryWatch(on = true): void {
    this.expiring = on;
    if (on) this.expireWatches();
  }

  /**
   * Cut the next response of `kinds` in half, once (`cut(kinds, false)` disarms it): for a watch, the
   * next event line written to any watch (a replayed one included) is written half, and the socket
   * destroyed; for a list, the next list body (headers with its full Content-Length) is written
   * half, and the socket destroyed. No clean end either way, as when a connection breaks.
   */
  cut(kinds: RequestKinds, on = true): void {
    for (const kind of kindsOf(kinds)) {
      if (on) this.cuts.add(kind);
      else this.cuts.delete(kind);
    }
  }

  /**
   * Answer the next list with a list `bytes` long (`undefined` disarms it): one small slice repeated,
   * written as the client reads it (chunked, no Content-Length) and never held whole in memory; the
   * writing stops when the client closes the connection.
   */
  flood(bytes: number | undefined): void {
    this.floodBytes = bytes;
  }

  /** While on, Event requests are held with no response; turned off, those held are reset. */
  stallEvents(on = true): void {
    this.stallingEvents = on;
    if (!on) for (const res of this.heldEvents) res.destroy();
  }

  /** Answer Event requests with this error Status (`times` of them, or all until turned off). */
  failEvents(failure: StatusFailure | false): void {
    this.eventFailure = failure ? { failure, left: failure.times ?? Number.POSITIVE_INFINITY } : undefined;
  }

  /**
   * Resolves with the next Event request answered that matches; rejects after `timeoutMs` (default
   * 20 s) naming the Event requests that came meanwhile.
   */
  nextEventCall(match: (c: EventCall) => boolean = anything, timeoutMs?: number): Promise<EventCall> {
    const from = this.eventCalls.length;
    return arrival<EventCall>(
      `an Event request${matching(match)}`,
      (arrived) => {
        const listener = (call: EventCall) => {
          if (match(call)) arrived(call);
        };
        this.on("event-call", listener);
        return () => this.off("event-call", listener);
      },
      {
        timeoutMs,
        meanwhile: () =>
          `Event requests meanwhile: ${listed(this.eventCalls.slice(from).map((c) => `${c.method} ${c.answer}`))}`,
      },
    );
  }

  /** Turn every fault off: partition, stalls, black hole, failures, 410 on every watch, cuts. */
  resetFaults(): void {
    this.stallEvents(false);
    this.failEvents(false);
    this.partition(false);
    this.stall("both", false);
    this.blackhole(false);
    this.fail("both", false);
    this.expireEveryWatch(false);
    this.cuts.clear();
    this.flood(undefined);
  }

  /**
   * Resolves at the next request of `kind` that matches. Requests are emitted when they arrive and
   * their answer is decided, failed, stalled and black-holed ones included: match on `answer`
   * when only some will do. Rejects after `timeoutMs` (default 20 s) naming the requests of `kind`
   * that came meanwhile.
   */
  next(
    kind: RequestKind,
    match: (r: RequestSeen) => boolean = anything,
    timeoutMs?: number,
  ): Promise<RequestSeen> {
    const from = this.log.length;
    return arrival<RequestSeen>(
      `a ${kind} request${matching(match)}`,
      (arrived) => {
        const listener = (seen: RequestSeen) => {
          if (match(seen)) arrived(seen);
        };
        this.on(kind, listener);
        return () => this.off(kind, listener);
      },
      {
        timeoutMs,
        meanwhile: () =>
          `${kind} requests meanwhile: ${listed(
            this.log
              .slice(from)
              .filter((r) => r.kind === kind)
              .map((r) => `${r.resource} ${r.answer}`),
          )}`,
      },
    );
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
    const at = performance.now();
    const url = new URL(req.url ?? "/", "https://127.0.0.1");
    this.calls.push({ method: req.method ?? "", url });
    const events = EVENTS_PATH.exec(url.pathname);
    if (events && req.headers.authorization === `Bearer ${this.token}`) {
      this.onEventRequest(req, res, events[1]!, events[2]);
      return;
    }
    const route = LIST_PATHS.map(([resource, path]) => ({ resource, m: path.exec(url.pathname) })).find(
      (r) => r.m,
    );
    const m = route?.m;
    const asked = route && m && req.method === "GET" ? askedOf(url, route.resource, m[1], at) : undefined;
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      sendStatus(res, { code: 401, reason: "Unauthorized", message: "Unauthorized" });
      if (asked) this.logRequest(asked, "status 401");
      return;
    }
    if (!m) {
      sendStatus(res, {
        code: 404,
        reason: "NotFound",
        message: `the server could not find the requested resource ${url.pathname}`,
      });
      return;
    }
    if (!asked) {
      sendStatus(res, {
        code: 405,
        reason: "MethodNotAllowed",
        message: `${req.method} is not supported by the stand-in server`,
      });
      return;
    }
    this.logRequest(asked, this.answer(asked, res));
  }

  /**
   * An Event request: POST creates (validated as events.k8s.io/v1 validates a new Event), PATCH
   * merges a patch into one (strategic merge and merge patches alike: an Event's fields are no
   * lists) and validates the result's series.
   */
  private onEventRequest(req: IncomingMessage, res: ServerResponse, namespace: string, name?: string): void {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on("data", (chunk: Buffer) => {
      size += chunk.length;
      if (size <= 3 * 1024 * 1024) chunks.push(chunk);
    });
    req.once("end", () => {
      const call: EventCall = {
        method: req.method ?? "",
        namespace,
        name,
        contentType: req.headers["content-type"],
        body: undefined,
        answer: "ok",
      };
      try {
        call.body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        call.body = undefined;
      }
      this.eventCalls.push(call);
      if (this.stallingEvents) {
        call.answer = "stalled";
        this.heldEvents.add(res);
        res.once("close", () => this.heldEvents.delete(res));
      } else call.answer = this.answerEvent(call, res);
      this.emit("event-call", call);
    });
  }

  private answerEvent(call: EventCall, res: ServerResponse): Answer {
    const f = this.eventFailure;
    if (f) {
      if (--f.left <= 0) this.eventFailure = undefined;
      return sendStatus(res, injected(f.failure));
    }
    if (call.body === undefined || typeof call.body !== "object" || call.body === null)
      return sendStatus(res, badRequest("the request body is not a JSON object"));
    const body = call.body as Record<string, unknown>;
    if (call.method === "POST" && call.name === undefined) {
      if (call.contentType !== "application/json")
        return sendStatus(res, { code: 415, reason: "UnsupportedMediaType", message: `${call.contentType}` });
      const meta = (body.metadata ?? {}) as Record<string, unknown>;
      if (meta.namespace !== undefined && meta.namespace !== call.namespace)
        return sendStatus(
          res,
          badRequest("the namespace of the provided object does not match the namespace sent on the request"),
        );
      const errors = eventErrors(body, call.namespace);
      if (errors.length > 0) return sendStatus(res, invalidEvent(meta.name, errors));
      const key = `${call.namespace}/${meta.name}`;
      if (this.events.has(key))
        return sendStatus(res, {
          code: 409,
          reason: "AlreadyExists",
          message: `events "${meta.name}" already exists`,
        });
      const stored = {
        ...body,
        metadata: { ...meta, namespace: call.namespace, resourceVersion: String(++this.rv) },
      };
      this.events.set(key, stored);
      return sendObject(res, 201, stored);
    }
    if (call.method === "PATCH" && call.name !== undefined) {
      const types = ["application/strategic-merge-patch+json", "application/merge-patch+json"];
      if (!types.includes(call.contentType ?? ""))
        return sendStatus(res, { code: 415, reason: "UnsupportedMediaType", message: `${call.contentType}` });
      const key = `${call.namespace}/${call.name}`;
      const old = this.events.get(key);
      if (!old)
        return sendStatus(res, { code: 404, reason: "NotFound", message: `events "${call.name}" not found` });
      const merged = mergePatch(old, body) as Record<string, unknown>;
      const errors = eventErrors(merged, call.namespace);
      if (errors.length > 0) return sendStatus(res, invalidEvent(call.name, errors));
      this.events.set(key, merged);
      return sendObject(res, 200, merged);
    }
    return sendStatus(res, {
      code: 405,
      reason: "MethodNotAllowed",
      message: `${call.method} is not supported by the stand-in server`,
    });
  }

  private logRequest(asked: Asked, answer: Answer): void {
    const seen: RequestSeen = { ...asked, answer, ...(answer === "expired" ? { expired: true } : {}) };
    this.log.push(seen);
    this.counts[seen.kind]++;
    this.emit(seen.kind, seen);
  }

  private answer(asked: Asked, res: ServerResponse): Answer {
    if (this.stalls.has(asked.kind)) {
      this.held.set(res, asked.kind);
      res.once("close", () => this.held.delete(res));
      return "stalled";
    }
    const failure = this.takeFailure(asked.kind);
    if (failure) return sendStatus(res, injected(failure));
    const invalid = invalidParameter(asked);
    if (invalid) return sendStatus(res, badRequest(invalid));
    return asked.kind === "list" ? this.list(asked, res) : this.watch(asked, res);
  }

  private takeFailure(kind: RequestKind): StatusFailure | undefined {
    const f = this.failures.get(kind);
    if (!f) return undefined;
    if (--f.left <= 0) this.failures.delete(kind);
    return f.failure;
  }

  /** Serve one list page, cut in half if a cut is armed. */
  private list(asked: Asked, res: ServerResponse): Answer {
    if (this.floodBytes !== undefined) {
      this.writeFlood(res, this.floodBytes);
      this.floodBytes = undefined;
      return "ok";
    }
    const page = this.page(asked);
    if ("code" in page) return sendStatus(res, page);
    const body = JSON.stringify(page);
    res.writeHead(200, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
    if (this.cuts.delete("list")) {
      writeHalfAndDestroy(res, body);
      return "cut";
    }
    res.end(body);
    return "ok";
  }

  /**
   * The list page asked for, following kube-apiserver's rules for resourceVersion and paging:
   * - continue: the next page of the snapshot the token names (a resourceVersion other than "" or
   *   "0" beside it is a 400); 410 Expired when that snapshot is older than the compacted history
   *   or no longer kept (more than MAX_SNAPSHOTS paged lists since);
   * - "0" ("any"): the whole current list, limit ignored, as the watch cache serves it
   *   (kubernetes/kubernetes#118394);
   * - a number: 504 "Too large resource version" (at once; a real server waits a few seconds
   *   first) above the current one; with a limit ("exact"), 410 below the compacted history;
   *   otherwise the current list is served ("not older than"; an exact read of an older
   *   revision is simplified to the current one);
   * - "" or absent ("most recent"): the current list.
   * A page with more items after it carries metadata.continue and remainingItemCount.
   */
  private page(asked: Asked): ListBody | Status {
    const { resourceVersion: rv, limit } = asked;
    const scope = scopeOf(asked);
    if (asked.continue !== undefined) return this.continuePage(asked, asked.continue);
    if (rv === "0") return this.pageOf(this.current(scope), this.rv, scope, 0, undefined);
    if (rv) {
      const n = Number(rv);
      if (n > this.rv) return tooLarge(rv, this.rv);
      if (limit && n < this.compactedRv)
        return expired("The resourceVersion for the provided list is too old.");
    }
    return this.pageOf(this.current(scope), this.rv, scope, 0, limit);
  }

  private continuePage(asked: Asked, token: string): ListBody | Status {
    if (asked.resourceVersion && asked.resourceVersion !== "0")
      return badRequest("specifying resource version is not allowed when using continue");
    const position = decodeContinue(token);
    if (!position || position.rv > this.rv) return badRequest("continue key is not valid");
    const snapshot =
      position.rv < this.compactedRv ? undefined : this.snapshotAt(position.rv, scopeOf(asked));
    if (!snapshot) return expired(CONTINUE_EXPIRED);
    const start = firstAtOrAfter(snapshot, position.start);
    return this.pageOf(snapshot, position.rv, scopeOf(asked), start, asked.limit);
  }

  /** Items [start, start + limit) of a snapshot; keeps the snapshot when items remain after them. */
  private pageOf(
    snapshot: readonly Entry[],
    rv: number,
    scope: Scope,
    start: number,
    limit: number | undefined,
  ): ListBody {
    const end = limit ? Math.min(snapshot.length, start + limit) : snapshot.length;
    const pods = scope.resource === "pods";
    const body: ListBody = {
      kind: pods ? "PodList" : "EndpointSliceList",
      apiVersion: pods ? "v1" : "discovery.k8s.io/v1",
      metadata: { resourceVersion: String(rv) },
      items: snapshot.slice(start, end).map((e) => e.item),
    };
    const last = snapshot[end - 1];
    if (end < snapshot.length && last) {
      this.keepSnapshot(rv, scope, snapshot);
      body.metadata.continue = encodeContinue(rv, last.key);
      body.metadata.remainingItemCount = snapshot.length - end;
    }
    return body;
  }

  /** The entries in scope now, in key order: references to the stored objects, not copies. */
  private current(scope: Scope): Entry[] {
    const entries: Entry[] = [];
    for (const e of (scope.resource === "pods" ? this.pods : this.objects).values())
      if (inScope(scope, e)) entries.push(e);
    return entries.sort(byKey);
  }

  /** A kept snapshot, or the current state when `rv` is the current resourceVersion (the same thing). */
  private snapshotAt(rv: number, scope: Scope): readonly Entry[] | undefined {
    return this.snapshots.get(snapshotKey(rv, scope)) ?? (rv === this.rv ? this.current(scope) : undefined);
  }

  private keepSnapshot(rv: number, scope: Scope, snapshot: readonly Entry[]): void {
    const key = snapshotKey(rv, scope);
    this.snapshots.delete(key);
    this.snapshots.set(key, snapshot);
    for (const oldest of this.snapshots.keys()) {
      if (this.snapshots.size <= MAX_SNAPSHOTS) break;
      this.snapshots.delete(oldest);
    }
  }

  private writeFlood(res: ServerResponse, bytes: number): void {
    const item = JSON.stringify(udpSliceItem("flood", "flood", String(this.rv)));
    const chunk = Buffer.from(`${item},`.repeat(Math.ceil(65_536 / (item.length + 1))));
    res.writeHead(200, { "content-type": "application/json" });
    res.write(
      `{"kind":"EndpointSliceList","apiVersion":"discovery.k8s.io/v1","metadata":{"resourceVersion":"${this.rv}"},"items":[`,
    );
    let left = bytes;
    const more = () => {
      while (left > 0 && !res.destroyed) {
        left -= chunk.length;
        this.floodWritten += chunk.length;
        if (!res.write(chunk)) return void res.once("drain", more);
      }
      if (!res.destroyed) res.end(`${item}]}`);
    };
    res.once("close", () => {
      left = 0;
    });
    more();
  }

  private watch(asked: Asked, res: ServerResponse): Answer {
    const { resourceVersion } = asked;
    const scope = scopeOf(asked);
    if (asked.sendInitialEvents) {
      const refused = this.streamingRefusal(asked);
      if (refused) return sendStatus(res, refused);
    }
    // A streaming list starts from the current state, which is never older than what was asked.
    const from =
      asked.sendInitialEvents ||
      resourceVersion === undefined ||
      resourceVersion === "" ||
      resourceVersion === "0"
        ? undefined
        : Number(resourceVersion);
    startStream(res);
    if (this.expiring || (from !== undefined && (!Number.isInteger(from) || from < this.compactedRv))) {
      res.end(expiredEvent(this.resourceVersion, resourceVersion));
      this.counts.expired++;
      return "expired";
    }
    if (this.blackholed) {
      this.hide(res);
      return "blackholed";
    }
    const w: OpenWatch = { scope, bookmarks: asked.allowWatchBookmarks, res, timer: undefined };
    this.watches.add(w);
    res.once("close", () => {
      clearTimeout(w.timer);
      this.watches.delete(w);
    });
    if (asked.timeoutSeconds) w.timer = setTimeout(() => this.endWatch(w), asked.timeoutSeconds * 1000);
    for (const line of this.replay(scope, from)) if (!this.send(w, line)) return "cut";
    if (asked.sendInitialEvents && !this.send(w, initialEventsEnd(this.resourceVersion))) return "cut";
    return "ok";
  }

  /** Why a streaming list is refused (422, as kube-apiserver validates it), or undefined. */
  private streamingRefusal(asked: Asked): Status | undefined {
    const invalid = (message: string): Status => ({
      code: 422,
      reason: "Invalid",
      message: `ListOptions.meta.k8s.io "" is invalid: ${message}`,
    });
    if (!this.streamingLists)
      return invalid(
        "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
      );
    if (asked.resourceVersionMatch !== "NotOlderThan")
      return invalid(
        "resourceVersionMatch: Forbidden: sendInitialEvents requires resourceVersionMatch=NotOlderThan",
      );
    if (!asked.allowWatchBookmarks)
      return invalid(
        "allowWatchBookmarks: Required value: sendInitialEvents requires allowWatchBookmarks=true",
      );
    return undefined;
  }

  /** The events a watch from `from` starts with: synthetic ADDED for all, or the history after it. */
  private *replay(scope: Scope, from: number | undefined): Generator<string> {
    if (from === undefined) {
      for (const e of this.current(scope)) yield event("ADDED", e.object);
      return;
    }
    for (const c of this.history) if (c.rv > from && inScope(scope, c)) yield event(c.type, c.object);
  }

  /** Write one event line to a watch; false when a cut took it (half written, socket destroyed). */
  private send(w: OpenWatch, line: string): boolean {
    if (!this.cuts.delete("watch")) {
      w.res.write(line);
      return true;
    }
    clearTimeout(w.timer);
    this.watches.delete(w);
    writeHalfAndDestroy(w.res, line);
    return false;
  }

  private endWatch(w: OpenWatch, last?: string): void {
    clearTimeout(w.timer);
    this.watches.delete(w);
    w.res.end(last);
  }

  private hide(res: ServerResponse): void {
    this.silent.add(res);
    res.once("close", () => this.silent.delete(res));
  }

  private put(entry: Entry, rv: number): void {
    const store = entry.resource === "pods" ? this.pods : this.objects;
    const type = store.has(entry.key) ? "MODIFIED" : "ADDED";
    store.set(entry.key, entry);
    const { resource, namespace, node, object } = entry;
    this.record({ rv, type, resource, namespace, node, object });
  }

  private record(change: Change): void {
    this.history.push(change);
    const line = event(change.type, change.object);
    for (const w of this.watches) if (inScope(w.scope, change)) this.send(w, line);
  }
}

/** A small UDP slice as a list item (no apiVersion, kind). */
function udpSliceItem(namespace: string, name: string, rv: string): unknown {
  return {
    metadata: { namespace, name, resourceVersion: rv, labels: { "kubernetes.io/service-name": name } },
    addressType: "IPv4",
    endpoints: [{ addresses: ["10.99.0.1"], conditions: { ready: true } }],
    ports: [{ port: 53, protocol: "UDP" }],
  };
}

function keyOf(o: V1EndpointSlice): string {
  return `${o.metadata?.namespace ?? ""}/${o.metadata?.name ?? ""}`;
}

function byKey(a: Entry, b: Entry): number {
  return a.key < b.key ? -1 : a.key > b.key ? 1 : 0;
}

function snapshotKey(rv: number, scope: Scope): string {
  // A namespace in a path is never empty, so "" can stand for cluster-wide.
  return `${rv}/${scope.resource}/${scope.namespace ?? ""}/${scope.node ?? ""}`;
}

function scopeOf(asked: Asked): Scope {
  return { resource: asked.resource, namespace: asked.namespace, node: asked.node };
}

/** Whether an object (or a change to one) is in a list's or watch's scope. */
function inScope(
  scope: Scope,
  o: { resource: Resource; namespace: string; node?: string | undefined },
): boolean {
  return (
    o.resource === scope.resource &&
    (scope.namespace === undefined || o.namespace === scope.namespace) &&
    (scope.node === undefined || o.node === scope.node)
  );
}

/** The index of the first entry whose key is `start` or after it. */
function firstAtOrAfter(snapshot: readonly Entry[], start: string): number {
  let lo = 0;
  let hi = snapshot.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((snapshot[mid]?.key ?? "") < start) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** A token as kube-apiserver makes one: base64 JSON of the snapshot's RV and the next key. */
function encodeContinue(rv: number, lastKey: string): string {
  // The key just after lastKey, as etcd's range reads take it.
  const start = `${lastKey}\u0000`;
  return Buffer.from(JSON.stringify({ v: CONTINUE_VERSION, rv, start })).toString("base64url");
}

function decodeContinue(token: string): { rv: number; start: string } | undefined {
  try {
    const { v, rv, start } = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
    if (v !== CONTINUE_VERSION || !Number.isInteger(rv) || rv <= 0 || typeof start !== "string")
      return undefined;
    return { rv, start };
  } catch {
    return undefined;
  }
}

function askedOf(url: URL, resource: Resource, namespace: string | undefined, at: number): Asked {
  const q = url.searchParams;
  const number = (name: string) => (q.has(name) ? Number(q.get(name)) : undefined);
  const fieldSelector = q.get("fieldSelector") ?? undefined;
  return {
    at,
    kind: q.get("watch") === "true" ? "watch" : "list",
    resource,
    namespace,
    node: /^spec\.nodeName=(.+)$/.exec(fieldSelector ?? "")?.[1],
    fieldSelector,
    resourceVersion: q.get("resourceVersion") ?? undefined,
    limit: number("limit"),
    continue: q.get("continue") ?? undefined,
    timeoutSeconds: number("timeoutSeconds"),
    allowWatchBookmarks: q.get("allowWatchBookmarks") === "true",
    sendInitialEvents: q.get("sendInitialEvents") === "true",
    resourceVersionMatch: q.get("resourceVersionMatch") ?? undefined,
  };
}

/** Why the request's parameters are invalid, or undefined. A watch's resourceVersion is judged later (410). */
function invalidParameter(asked: Asked): string | undefined {
  const count = (n: number | undefined) => n === undefined || (Number.isInteger(n) && n >= 0);
  if (!count(asked.limit)) return `invalid limit: must be a non-negative integer`;
  if (!count(asked.timeoutSeconds)) return `invalid timeoutSeconds: must be a non-negative integer`;
  if (asked.fieldSelector !== undefined && (asked.resource !== "pods" || asked.node === undefined))
    return `"${asked.fieldSelector.split("=")[0]}" is not a known field selector: only "spec.nodeName" (of pods) is served`;
  if (asked.kind === "list" && !/^\d*$/.test(asked.resourceVersion ?? ""))
    return `invalid resourceVersion: ${asked.resourceVersion}`;
  return undefined;
}

function kindsOf(kinds: RequestKinds): RequestKind[] {
  return kinds === "both" ? ["list", "watch"] : [kinds];
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** What a DELETED event carries: the last state, at the deletion's resourceVersion. */
function deletedSlice(old: V1EndpointSlice, rv: number): V1EndpointSlice {
  return Object.freeze({ ...old, metadata: Object.freeze({ ...old.metadata, resourceVersion: String(rv) }) });
}

function event(type: EventType | "BOOKMARK", object: unknown): string {
  return `${JSON.stringify({ type, object })}\n`;
}

/** The bookmark that ends a streaming list's state. */
function initialEventsEnd(rv: string): string {
  return event("BOOKMARK", {
    apiVersion: "discovery.k8s.io/v1",
    kind: "EndpointSlice",
    metadata: { resourceVersion: rv, annotations: { "k8s.io/initial-events-end": "true" } },
  });
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

function startStream(res: ServerResponse): void {
  res.writeHead(200, { "content-type": "application/json", connection: "close" });
  res.flushHeaders();
}

/** Write the first half of `text` and destroy the socket once it is written: a connection broken mid-write. */
function writeHalfAndDestroy(res: ServerResponse, text: string): void {
  res.write(text.slice(0, Math.floor(text.length / 2)), () => res.destroy());
}

const REASONS: Record<number, string> = {
  400: "BadRequest",
  422: "Invalid",
  401: "Unauthorized",
  403: "Forbidden",
  404: "NotFound",
  409: "Conflict",
  410: "Expired",
  429: "TooManyRequests",
  500: "InternalError",
  503: "ServiceUnavailable",
  504: "Timeout",
};

const MESSAGES: Record<number, string> = {
  429: "Too many requests, please try again later.",
  500: "Internal error occurred: injected by the stand-in server",
  503: "the server is currently unable to handle the request",
};

function injected(failure: StatusFailure): Status {
  const { code } = failure;
  const retryAfterSeconds = failure.retryAfterSeconds ?? (code === 429 ? 1 : undefined);
  return {
    code,
    ...(REASONS[code] ? { reason: REASONS[code] } : {}),
    message: failure.message ?? MESSAGES[code] ?? `injected failure ${code}`,
    ...(retryAfterSeconds !== undefined ? { details: { retryAfterSeconds } } : {}),
  };
}

function badRequest(message: string): Status {
  return { code: 400, reason: "BadRequest", message };
}

function expired(message: string): Status {
  return { code: 410, reason: "Expired", message };
}

function tooLarge(asked: string, current: number): Status {
  return {
    code: 504,
    reason: "Timeout",
    message: `Too large resource version: ${asked}, current: ${current}`,
    details: {
      causes: [{ reason: "ResourceVersionTooLarge", message: "Too large resource version" }],
      retryAfterSeconds: 1,
    },
  };
}

/**
 * What events.k8s.io/v1 finds wrong in an Event (ValidateEventCreate's strict rules: name, eventTime,
 * type, reportingController, reportingInstance, action, reason, note, regarding's namespace,
 * series), as "field: problem".
 */
export function eventErrors(e: Record<string, unknown>, namespace: string): string[] {
  const errors: string[] = [];
  const text = (v: unknown) => (typeof v === "string" ? v : "");
  const meta = (e.metadata ?? {}) as Record<string, unknown>;
  const dnsSubdomain = /^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/;
  if (!dnsSubdomain.test(text(meta.name))) errors.push("metadata.name: must be a DNS subdomain");
  if (!microTime(e.eventTime)) errors.push("eventTime: Required value");
  if (e.type !== "Normal" && e.type !== "Warning")
    errors.push(`type: Invalid value: ${JSON.stringify(e.type)}`);
  const controller = text(e.reportingController);
  if (controller === "") errors.push("reportingController: Required value");
  else if (
    !/^([a-z0-9]([-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/.test(controller)
  )
    errors.push("reportingController: must be a qualified name");
  for (const field of ["reportingInstance", "action", "reason"]) {
    const v = text(e[field]);
    if (v === "") errors.push(`${field}: Required value`);
    else if (v.length > EVENT_FIELD_LIMIT)
      errors.push(`${field}: can have at most ${EVENT_FIELD_LIMIT} characters`);
  }
  if (e.note !== undefined && (typeof e.note !== "string" || Buffer.byteLength(e.note) > EVENT_NOTE_LIMIT))
    errors.push(`note: can have at most ${EVENT_NOTE_LIMIT} characters`);
  const regarding = (e.regarding ?? {}) as Record<string, unknown>;
  if (text(regarding.namespace) === "" && namespace !== "default" && namespace !== "kube-system")
    errors.push("regarding.namespace: does not match event.namespace");
  for (const deprecated of [
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
  ])
    if (e[deprecated] !== undefined) errors.push(`${deprecated}: needs to be unset`);
  if (e.series !== undefined && e.series !== null) {
    const series = e.series as Record<string, unknown>;
    if (typeof series.count !== "number" || series.count < 2)
      errors.push("series.count: should be at least 2");
    if (!microTime(series.lastObservedTime)) errors.push("series.lastObservedTime: Required value");
  }
  return errors;
}

/** Whether `v` is a MicroTime as the API reads one: RFC 3339 with up to 6 fractional digits. */
function microTime(v: unknown): boolean {
  return typeof v === "string" && /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{1,6})?(Z|[+-]\d\d:\d\d)$/.test(v);
}

function invalidEvent(name: unknown, errors: readonly string[]): Status {
  return {
    code: 422,
    reason: "Invalid",
    message: `Event.events.k8s.io "${String(name)}" is invalid: [${errors.join(", ")}]`,
  };
}

/** A JSON merge patch (RFC 7386): objects merge, null deletes, anything else replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch)) return patch;
  const out: Record<string, unknown> =
    typeof target === "object" && target !== null && !Array.isArray(target) ? { ...(target as object) } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else out[k] = mergePatch(out[k], v);
  }
  return out;
}

function sendObject(res: ServerResponse, code: number, object: unknown): Answer {
  const body = JSON.stringify(object);
  res.writeHead(code, { "content-type": "application/json", "content-length": Buffer.byteLength(body) });
  res.end(body);
  return "ok";
}

/** Answer a Status; returns how (410 is "expired"). */
function sendStatus(res: ServerResponse, s: Status): Answer {
  const body = JSON.stringify({
    kind: "Status",
    apiVersion: "v1",
    metadata: {},
    status: "Failure",
    message: s.message,
    ...(s.reason ? { reason: s.reason } : {}),
    ...(s.details ? { details: s.details } : {}),
    code: s.code,
  });
  const headers: OutgoingHttpHeaders = {
    "content-type": "application/json",
    "content-length": Buffer.byteLength(body),
  };
  if (s.details?.retryAfterSeconds !== undefined)
    headers["retry-after"] = String(s.details.retryAfterSeconds);
  res.writeHead(s.code, headers);
  res.end(body);
  return s.code === 410 ? "expired" : `status ${s.code}`;
}

const anything = (): boolean => true;

/** A wait's match for its error message: its source, unless it takes anything. */
function matching(match: (x: never) => boolean): string {
  return match === anything ? "" : ` matching ${String(match)}`;
}
