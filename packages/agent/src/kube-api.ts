/**
 * EndpointSliceApi: the two requests the agent makes of the API server — one page of the
 * cluster-wide EndpointSlice list, and a watch from a resourceVersion — with the client library's
 * KubeConfig for the server, and RequestAuth for TLS and credentials (a fresh agent and fresh
 * credentials per request, as the library's own Watch does), over Node's http(s). Objects come
 * out as parsed JSON, unchecked: the caller validates them.
 *
 * Why not the library's list and Watch: its list deserialises whole pages into model classes, and
 * its Watch cannot be given up before the server answers (it replaces the timeout signal it builds
 * with its own controller, handed out only after the headers came) and silently drops lines it
 * cannot parse. A controller must be able to give up any request, and treat a broken line as a
 * broken stream.
 */
import type { IncomingMessage } from "node:http";
import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { setImmediate as turn } from "node:timers/promises";
import type { KubeConfig } from "@kubernetes/client-node";
import { AnswerTooLargeError, BrokenAnswerError, ObjectStream } from "./object-stream.js";
import type { ListAnswer, ListRequest, ListWatchSource, WatchRequest } from "./reflector.js";
import { RequestAuth } from "./request-auth.js";

/** The cluster-wide list/watch path of EndpointSlices. */
export const ENDPOINTSLICES_PATH = "/apis/discovery.k8s.io/v1/endpointslices";

/** The cluster-wide list/watch path of Pods (the agent asks for its node's with a field selector). */
export const PODS_PATH = "/api/v1/pods";

/** The bytes of watch lines parsed in one turn of the event loop (a streaming list's come in megabytes). */
const LINES_PER_TURN_BYTES = 64 * 1024;

/** Which objects a ListWatchApi lists and watches. */
export interface ListWatchResource {
  path: string;
  /** e.g. spec.nodeName=NODE */
  fieldSelector?: string;
}

/** What a watch line carries around its object: `{"type":"MODIFIED","object":` and `}`. */
const EVENT_ENVELOPE_BYTES = 1024;

/** The bounds of what the server sends; an answer over one is abandoned. */
export interface AnswerBounds {
  /** Bytes of one object (a list item, a watch event's object). */
  maxObjectBytes: number;
  /** Bytes of a list answer, or of a streaming list's initial events. */
  maxListBytes: number;
}

/**
 * The API server answered with an error status, or a watch sent an ERROR event. `code` is the
 * HTTP status (410 for "Expired": the resourceVersion or continue token is too old; list again).
 */
export class ApiStatusError extends Error {
  override readonly name = "ApiStatusError";
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    /** The server does not have the resourceVersion asked for yet (504 with cause ResourceVersionTooLarge). */
    readonly resourceVersionTooLarge = false,
  ) {
    super(message);
  }

  /** True for 410 Gone / Expired: what was asked for is no longer in the server's history. */
  get expired(): boolean {
    return this.code === 410;
  }
}

export { AnswerTooLargeError, BrokenAnswerError };

/** The annotation of the bookmark that ends a streaming list's initial events. */
const INITIAL_EVENTS_END = "k8s.io/initial-events-end";

/** True for the bookmark that ends a streaming list's initial events: the state is whole. */
export function isInitialEventsEnd(event: WatchEvent): boolean {
  if (event.type !== "BOOKMARK") return false;
  const metadata = (event.object as { metadata?: { annotations?: Record<string, unknown> } } | null)
    ?.metadata;
  return metadata?.annotations?.[INITIAL_EVENTS_END] === "true";
}

/** One watch event as sent: `type` (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) and the raw object. */
export interface WatchEvent {
  type: string;
  object: unknown;
}

export class EndpointSliceApi implements ListWatchSource {
  constructor(
    private readonly kubeConfig: KubeConfig,
    private readonly bounds: AnswerBounds,
    private readonly auth = new RequestAuth(kubeConfig),
    private readonly resource: ListWatchResource = { path: ENDPOINTSLICES_PATH },
  ) {}

  /** The server's URL, for logs. */
  get server(): string | undefined {
    return this.kubeConfig.getCurrentCluster()?.server;
  }

  /**
   * One page of the list, each item to `onItem` as it is read from the stream. Rejects with
   * ApiStatusError for an error status, AnswerTooLargeError for an answer over a bound (abandoned
   * as soon as it is), BrokenAnswerError, or the request's error (abort included).
   */
  async list(
    request: ListRequest,
    signal: AbortSignal,
    onItem: (item: unknown) => void,
  ): Promise<ListAnswer> {
    const res = await this.get(
      {
        resourceVersion: request.resourceVersion,
        limit: request.limit === undefined ? undefined : String(request.limit),
        continue: request.continue,
      },
      signal,
    );
    const declared = Number(res.headers["content-length"]);
    if (declared > this.bounds.maxListBytes) {
      res.destroy();
      throw new AnswerTooLargeError(
        "answer",
        this.bounds.maxListBytes,
        `the list answer is over ${this.bounds.maxListBytes} bytes (Content-Length ${declared}); abandoned`,
      );
    }
    const answer = new ObjectStream((_items, item) => onItem(item), {
      what: "the list answer",
      streamed: { items: "[" },
      maxPieceBytes: this.bounds.maxObjectBytes,
      maxBytes: this.bounds.maxListBytes,
    });
    await answer.read(res as AsyncIterable<Buffer>, signal);
    // A response cut short ends without error on some paths: "aborted" says so.
    if (res.errored || !res.complete) throw res.errored ?? new BrokenAnswerError("the answer was cut short");
    signal.throwIfAborted();
    const { members, streamed } = answer.end();
    const list = members as { metadata?: { resourceVersion?: unknown; continue?: unknown } };
    if (!streamed.has("items")) throw new BrokenAnswerError("the list answer has no items array");
    const rv = list.metadata?.resourceVersion;
    if (typeof rv !== "string" || rv === "")
      throw new BrokenAnswerError("the list answer has no resourceVersion");
    const next = list.metadata?.continue;
    return {
      resourceVersion: rv,
      continue: typeof next === "string" && next ? next : undefined,
    };
  }

  /**
   * Watch from `resourceVersion`, asking the server to end the watch after `timeoutSeconds` and to
   * send bookmarks; with `sendInitialEvents`, a streaming list (KEP-3157): the state not older than
   * `resourceVersion` first, as ADDED events, up to a bookmark annotated `k8s.io/initial-events-end`.
   * `onEvent` gets each event as it arrives; the stream waits for the promise it may return. An
   * ERROR event rejects. Resolves when the server ends the stream; rejects on an error status, a
   * broken line, or the request's error (abort included). `onOpen` is called once the server has
   * answered 200.
   */
  async watch(
    request: WatchRequest,
    signal: AbortSignal,
    onEvent: (event: WatchEvent) => void | Promise<void>,
    onOpen?: () => void,
  ): Promise<void> {
    const res = await this.get(
      {
        watch: "true",
        resourceVersion: request.resourceVersion,
        allowWatchBookmarks: "true",
        timeoutSeconds: String(request.timeoutSeconds),
        ...(request.sendInitialEvents
          ? { sendInitialEvents: "true", resourceVersionMatch: "NotOlderThan" }
          : {}),
      },
      signal,
    );
    onOpen?.();
    const maxLine = this.bounds.maxObjectBytes + EVENT_ENVELOPE_BYTES;
    // What a streaming list's initial events have sent; -1 once they ended.
    let initial = request.sendInitialEvents ? 0 : -1;
    // Decoded as a stream: a character split between two chunks stays whole.
    res.setEncoding("utf8");
    let partial = "";
    let sinceTurn = 0;
    for await (const chunk of res as AsyncIterable<string>) {
      if (initial >= 0) initial += chunk.length;
      if (initial > this.bounds.maxListBytes)
        throw new AnswerTooLargeError(
          "answer",
          this.bounds.maxListBytes,
          `a streaming list's initial events are over ${this.bounds.maxListBytes} bytes; abandoned`,
        );
      let text = partial + chunk;
      let newline = text.indexOf("\n");
      while (newline >= 0) {
        const line = text.slice(0, newline);
        text = text.slice(newline + 1);
        newline = text.indexOf("\n");
        if (line.length > maxLine) throw lineTooLong(maxLine);
        if (line.trim() === "") continue;
        const event = eventOf(line);
        if (initial >= 0 && isInitialEventsEnd(event)) initial = -1;
        const applying = onEvent(event);
        if (applying) await applying;
        sinceTurn += line.length;
        if (sinceTurn >= LINES_PER_TURN_BYTES) {
          sinceTurn = 0;
          await turn();
          signal.throwIfAborted();
        }
      }
      if (text.length > maxLine) throw lineTooLong(maxLine);
      partial = text;
    }
    // A server ends a watch between lines; a partial line is a connection that broke.
    if (partial.trim() !== "") throw new BrokenAnswerError("the watch ended in the middle of a line");
  }

  /** GET the list path with these parameters; resolves with a 200 response, else rejects. */
  private get(query: Record<string, string | undefined>, signal: AbortSignal): Promise<IncomingMessage> {
    const { path, fieldSelector } = this.resource;
    return apiRequest(
      this.kubeConfig,
      this.auth,
      { method: "GET", path, query: { ...query, fieldSelector } },
      signal,
    );
  }
}

/** One request to the API server: its method, path, query and JSON body. */
export interface ApiRequest {
  method: string;
  path: string;
  query?: Record<string, string | undefined>;
  /** Sent as JSON, with this content type. */
  body?: { contentType: string; value: unknown };
}

/**
 * Send one request to the kubeconfig's server with fresh credentials; resolves with the response
 * of a 2xx status, else rejects with ApiStatusError (or the request's error, abort included).
 */
export async function apiRequest(
  kubeConfig: KubeConfig,
  auth: RequestAuth,
  asked: ApiRequest,
  signal: AbortSignal,
): Promise<IncomingMessage> {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new Error("the kubeconfig has no current cluster");
  const url = new URL(cluster.server.replace(/\/+$/, "") + asked.path);
  for (const [k, v] of Object.entries(asked.query ?? {})) if (v !== undefined) url.searchParams.set(k, v);
  const credentials = await auth.forRequest(signal);
  signal.throwIfAborted();
  const body = asked.body ? JSON.stringify(asked.body.value) : undefined;
  const headers = {
    accept: "application/json",
    ...(asked.body ? { "content-type": asked.body.contentType } : {}),
    ...credentials.headers,
  };
  const agent = credentials.agent;
  const request = url.protocol === "http:" ? httpRequest : httpsRequest;
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = request(url, { method: asked.method, headers, agent, signal }, resolve);
    req.once("error", reject);
    req.end(body);
  });
  // The agent is this request's alone: its sockets go when the response does.
  res.once("close", () => agent?.destroy());
  const status = res.statusCode ?? 0;
  if (status >= 200 && status < 300) return res;
  if (status === 401) credentials.unauthorized();
  const text = await readBody(res, signal).catch(() => "");
  throw statusError(status, text);
}

/** An error answer is a Status of a few hundred bytes: past this much, it is not read on. */
const MAX_ERROR_BODY = 64 * 1024;

async function readBody(res: IncomingMessage, signal: AbortSignal): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of res as AsyncIterable<Buffer>) {
    chunks.push(chunk);
    size += chunk.length;
    // Leaving the loop destroys the answer: the rest is never received.
    if (size > MAX_ERROR_BODY) return Buffer.concat(chunks).toString("utf8", 0, MAX_ERROR_BODY);
  }
  // A response cut short ends without error on some paths: "aborted" says so.
  if (res.errored || !res.complete) throw res.errored ?? new BrokenAnswerError("the answer was cut short");
  signal.throwIfAborted();
  return Buffer.concat(chunks).toString("utf8");
}

function lineTooLong(maxLine: number): AnswerTooLargeError {
  return new AnswerTooLargeError(
    "object",
    maxLine,
    `a watch event is over ${maxLine} bytes; the watch is abandoned`,
  );
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new BrokenAnswerError(`the ${what} is not JSON: ${(err as Error).message}`);
  }
}

function eventOf(line: string): WatchEvent {
  const event = parseJson(line, "watch line") as { type?: unknown; object?: unknown } | null;
  if (typeof event !== "object" || event === null || typeof event.type !== "string")
    throw new BrokenAnswerError("a watch line is not an event");
  if (event.type === "ERROR") throw statusOf(event.object, 0);
  return { type: event.type, object: event.object };
}

function statusError(httpCode: number, body: string): ApiStatusError {
  let status: unknown;
  try {
    status = JSON.parse(body);
  } catch {
    status = undefined;
  }
  return statusOf(status, httpCode);
}

/** An ApiStatusError from a Status object (its code wins over the HTTP status, as client-go reads it). */
function statusOf(status: unknown, httpCode: number): ApiStatusError {
  const s = (typeof status === "object" && status !== null ? status : {}) as Record<string, unknown>;
  const code = typeof s.code === "number" ? s.code : httpCode;
  const reason = typeof s.reason === "string" ? s.reason : "";
  const message = typeof s.message === "string" ? s.message : `HTTP ${code}`;
  const causes = (s.details as { causes?: unknown } | undefined)?.causes;
  const tooLarge =
    (Array.isArray(causes) &&
      causes.some((c) => (c as { reason?: unknown } | null)?.reason === "ResourceVersionTooLarge")) ||
    message.includes("Too large resource version");
  return new ApiStatusError(code, reason, `${code}${reason ? ` ${reason}` : ""}: ${message}`, tooLarge);
}
