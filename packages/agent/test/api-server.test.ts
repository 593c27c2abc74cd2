/**
 * The stand-in API server on its own, through plain HTTPS requests that trust its CA: paged lists,
 * watch timeouts, the request log, and each fault it can inject.
 */
import assert from "node:assert/strict";
import { EventEmitter } from "node:events";
import type { ClientRequest, IncomingHttpHeaders, IncomingMessage } from "node:http";
import { request } from "node:https";
import { after, before, describe, test } from "node:test";
import { StandInApiServer } from "./kit/api-server.js";
import { udpSlice } from "./kit/slices.js";
import { arrival } from "./kit/waits.js";

const SLICES = "/apis/discovery.k8s.io/v1/endpointslices";

let api: StandInApiServer;
before(async () => {
  api = await StandInApiServer.start();
});
after(async () => {
  await api.close();
});

let namespaceCounter = 0;
/** A fresh namespace, so tests sharing the server do not see each other's slices. */
function freshNamespace(): string {
  return `ns${++namespaceCounter}`;
}

function slicesIn(namespace: string, query = ""): string {
  return `/apis/discovery.k8s.io/v1/namespaces/${namespace}/endpointslices${query ? `?${query}` : ""}`;
}

interface EventLine {
  type: string;
  object: {
    metadata?: { name?: string; resourceVersion?: string };
    code?: number;
    reason?: string;
  };
}

interface ListReply {
  metadata: { resourceVersion: string; continue?: string; remainingItemCount?: number };
  items: { metadata?: { name?: string; resourceVersion?: string } }[];
}

/**
 * One request on its own connection, its response read as it comes. `response` resolves at the
 * headers; `closed` when the connection ends, saying whether the response was complete (false when
 * the server destroyed the socket mid-body, or never answered). Each gives up 20 s after the
 * request was made, naming it.
 */
class Exchange extends EventEmitter {
  text = "";
  readonly response: Promise<{ status: number; headers: IncomingHttpHeaders }>;
  readonly closed: Promise<{ complete: boolean }>;
  private ended = false;
  /** Whether response headers came. */
  answered = false;
  private readonly req: ClientRequest;

  constructor(
    private readonly path: string,
    token = api.token,
  ) {
    super();
    this.req = request(`${api.url}${path}`, {
      ca: api.certificate.cert,
      headers: { authorization: `Bearer ${token}` },
      agent: false,
    });
    this.response = arrival(`the response to ${path}`, (arrived) => {
      const onResponse = (res: IncomingMessage) => {
        this.answered = true;
        arrived({ status: res.statusCode ?? 0, headers: res.headers });
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          this.text += chunk;
          this.emit("change");
        });
        res.on("error", () => {});
        res.once("close", () => this.end(res.complete));
      };
      this.req.once("response", onResponse);
      return () => this.req.off("response", onResponse);
    });
    this.closed = arrival(`the end of the connection of ${path}`, (arrived) => {
      this.once("closed", arrived);
      return () => this.off("closed", arrived);
    });
    this.req.on("error", () => {});
    // Without a response, the request's close is the end.
    this.req.once("close", () => {
      if (!this.answered) this.end(false);
    });
    this.req.end();
  }

  /** The complete lines received so far, parsed. */
  get events(): EventLine[] {
    return this.text
      .split("\n")
      .slice(0, -1)
      .map((line) => JSON.parse(line) as EventLine);
  }

  /**
   * Resolves once `condition` holds on what has arrived; rejects if the connection ends first, or
   * after `timeoutMs` (default 20 s).
   */
  until(condition: (x: Exchange) => boolean, timeoutMs?: number): Promise<void> {
    return arrival<void>(
      `${String(condition)} on the response to ${this.path}`,
      (arrived, failed) => {
        const check = () => {
          if (condition(this)) arrived();
          else if (this.ended) failed(new Error(`the connection ended with ${JSON.stringify(this.text)}`));
        };
        this.on("change", check);
        check();
        return () => this.off("change", check);
      },
      { timeoutMs, meanwhile: () => `received: ${JSON.stringify(this.text.slice(-300))}` },
    );
  }

  private end(complete: boolean): void {
    if (this.ended) return;
    this.ended = true;
    this.emit("change");
    this.emit("closed", { complete });
  }

  abort(): void {
    this.req.destroy();
  }
}

/** A whole response. */
async function get(
  path: string,
  token?: string,
): Promise<{ status: number; headers: IncomingHttpHeaders; body: string }> {
  const x = new Exchange(path, token);
  const { status, headers } = await x.response;
  const { complete } = await x.closed;
  assert.ok(complete, `the response to ${path} was cut`);
  return { status, headers, body: x.text };
}

async function list(path: string): Promise<ListReply> {
  const reply = await get(path);
  assert.equal(reply.status, 200, reply.body);
  return JSON.parse(reply.body) as ListReply;
}

function names(reply: ListReply): (string | undefined)[] {
  return reply.items.map((i) => i.metadata?.name);
}

/** Slices a, b, c, ... (count of them) in `namespace`. */
function fill(namespace: string, count: number): void {
  for (let i = 0; i < count; i++)
    api.apply(udpSlice(String.fromCharCode(97 + i), "svc", 53, ["10.0.0.1"], namespace));
}

describe("stand-in API server", () => {
  test("a paged list: every page from the first page's snapshot, whatever changes between pages", async () => {
    const ns = freshNamespace();
    fill(ns, 5);
    const first = await list(slicesIn(ns, "limit=2"));
    const rv = first.metadata.resourceVersion;
    assert.equal(rv, api.resourceVersion);
    assert.deepEqual(names(first), ["a", "b"]);
    assert.equal(first.metadata.remainingItemCount, 3);
    assert.ok(first.metadata.continue);
    const cNew = api.apply(udpSlice("c", "svc", 53, ["10.0.0.2"], ns));
    api.remove(ns, "d");
    api.apply(udpSlice("f", "svc", 53, ["10.0.0.3"], ns));
    const second = await list(
      slicesIn(ns, `limit=2&continue=${encodeURIComponent(first.metadata.continue)}`),
    );
    assert.equal(second.metadata.resourceVersion, rv);
    assert.deepEqual(names(second), ["c", "d"]);
    assert.notEqual(second.items[0]?.metadata?.resourceVersion, cNew.metadata?.resourceVersion);
    assert.equal(second.metadata.remainingItemCount, 1);
    const third = await list(
      slicesIn(ns, `limit=2&continue=${encodeURIComponent(second.metadata.continue ?? "")}`),
    );
    assert.deepEqual(names(third), ["e"]);
    assert.equal(third.metadata.continue, undefined);
    assert.equal(third.metadata.remainingItemCount, undefined);
    // A new list sees the changes.
    const fresh = await list(slicesIn(ns, "limit=10"));
    assert.deepEqual(names(fresh), ["a", "b", "c", "e", "f"]);
    assert.equal(fresh.metadata.resourceVersion, api.resourceVersion);
    assert.equal(fresh.metadata.continue, undefined);
  });

  test("a continue token older than the compacted history is 410 Expired; a malformed one is 400", async () => {
    const ns = freshNamespace();
    fill(ns, 3);
    const first = await list(slicesIn(ns, "limit=1"));
    const token = encodeURIComponent(first.metadata.continue ?? "");
    api.apply(udpSlice("z", "svc", 53, ["10.0.0.9"], ns));
    api.compact();
    const stale = await get(slicesIn(ns, `limit=1&continue=${token}`));
    assert.equal(stale.status, 410);
    const status = JSON.parse(stale.body);
    assert.equal(status.kind, "Status");
    assert.equal(status.reason, "Expired");
    assert.equal(status.code, 410);
    assert.match(status.message, /continue parameter is too old to display a consistent list result/);
    assert.equal(api.requests.at(-1)?.answer, "expired");
    const malformed = await get(slicesIn(ns, "limit=1&continue=not-a-token"));
    assert.equal(malformed.status, 400);
    assert.equal(JSON.parse(malformed.body).reason, "BadRequest");
    const fresh = await list(slicesIn(ns, "limit=1"));
    const withRv = await get(
      slicesIn(ns, `limit=1&resourceVersion=2&continue=${encodeURIComponent(fresh.metadata.continue ?? "")}`),
    );
    assert.equal(withRv.status, 400);
  });

  test('list resourceVersion: "0" is served whole (limit ignored), a number not newer is served, a newer one is 504', async () => {
    const ns = freshNamespace();
    fill(ns, 3);
    const any = await list(slicesIn(ns, "limit=1&resourceVersion=0"));
    assert.deepEqual(names(any), ["a", "b", "c"]);
    assert.equal(any.metadata.continue, undefined);
    const notOlder = await list(slicesIn(ns, `resourceVersion=${Number(api.resourceVersion) - 1}`));
    assert.equal(notOlder.metadata.resourceVersion, api.resourceVersion);
    const tooNew = await get(slicesIn(ns, `resourceVersion=${Number(api.resourceVersion) + 5}`));
    assert.equal(tooNew.status, 504);
    assert.match(JSON.parse(tooNew.body).message, /^Too large resource version/);
    assert.equal((await get(slicesIn(ns, "resourceVersion=abc"))).status, 400);
    assert.equal((await get(slicesIn(ns, "limit=-1"))).status, 400);
  });

  test("a paged list of 10,000 slices of 10 endpoints with limit=500, while slices change", async () => {
    const ns = freshNamespace();
    const addresses = Array.from({ length: 10 }, (_, i) => `10.1.0.${i}`);
    const name = (i: number) => `s${String(i).padStart(5, "0")}`;
    for (let i = 0; i < 10_000; i++) api.apply(udpSlice(name(i), `svc${i}`, 53, addresses, ns));
    const seen: (string | undefined)[] = [];
    let query = "limit=500";
    let pages = 0;
    for (;;) {
      const page = await list(slicesIn(ns, query));
      seen.push(...names(page));
      pages++;
      api.remove(ns, name(pages * 500 + 7));
      if (!page.metadata.continue) break;
      query = `limit=500&continue=${encodeURIComponent(page.metadata.continue)}`;
    }
    assert.equal(pages, 20);
    assert.deepEqual(
      seen,
      Array.from({ length: 10_000 }, (_, i) => name(i)),
    );
  });

  test("a watch ends cleanly after timeoutSeconds, and the request log says what it asked", async () => {
    const ns = freshNamespace();
    fill(ns, 1);
    const seen = api.next("watch");
    const w = new Exchange(slicesIn(ns, "watch=true&timeoutSeconds=1&allowWatchBookmarks=true"));
    assert.equal((await w.response).status, 200);
    assert.deepEqual(await w.closed, { complete: true });
    assert.deepEqual(
      w.events.map((e) => [e.type, e.object.metadata?.name]),
      [["ADDED", "a"]],
    );
    const r = await seen;
    assert.equal(r.timeoutSeconds, 1);
    assert.equal(r.allowWatchBookmarks, true);
    assert.equal(r.answer, "ok");
  });

  test("a streaming list: refused (422) unless on; then the state in key order, the bookmark that ends it, and changes", async () => {
    const ns = freshNamespace();
    fill(ns, 2);
    const query =
      "watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan";
    const refused = await get(slicesIn(ns, query));
    assert.equal(refused.status, 422);
    assert.match(JSON.parse(refused.body).message, /WatchList feature gate/);
    api.streamingLists = true;
    try {
      const seen = api.next("watch");
      const w = new Exchange(slicesIn(ns, `${query}&resourceVersion=1`));
      assert.equal((await w.response).status, 200);
      await w.until((x) => x.events.length >= 3);
      const r = await seen;
      assert.equal(r.sendInitialEvents, true);
      assert.equal(r.resourceVersionMatch, "NotOlderThan");
      assert.deepEqual(
        w.events.map((e) => [e.type, e.object.metadata?.name]),
        [
          ["ADDED", "a"],
          ["ADDED", "b"],
          ["BOOKMARK", undefined],
        ],
      );
      const end = w.events[2]!.object.metadata as { resourceVersion: string; annotations: object };
      assert.deepEqual(end.annotations, { "k8s.io/initial-events-end": "true" });
      assert.equal(end.resourceVersion, api.resourceVersion);
      api.remove(ns, "a");
      await w.until((x) => x.events.length >= 4);
      assert.deepEqual([w.events[3]!.type, w.events[3]!.object.metadata?.name], ["DELETED", "a"]);
      w.abort();
      const unmatched = await get(slicesIn(ns, "watch=true&sendInitialEvents=true&allowWatchBookmarks=true"));
      assert.equal(unmatched.status, 422);
    } finally {
      api.streamingLists = false;
    }
  });

  test("the request log: every list and watch, with its parameters and answer, failed ones included", async () => {
    const ns = freshNamespace();
    api.touch();
    api.compact();
    const start = performance.now();
    const before = api.requests.length;
    await list(slicesIn(ns, "limit=7&resourceVersion=&timeoutSeconds=30"));
    const unauthorized = api.next("list");
    assert.equal((await get(slicesIn(ns), "wrong-token")).status, 401);
    assert.equal((await unauthorized).answer, "status 401");
    const w = new Exchange(`${SLICES}?watch=true&resourceVersion=1`);
    await w.response;
    w.abort();
    const log = api.requests.slice(before);
    assert.deepEqual(
      log.map(({ at: _at, ...rest }) => rest),
      [
        {
          kind: "list",
          resource: "endpointslices",
          namespace: ns,
          node: undefined,
          fieldSelector: undefined,
          resourceVersion: "",
          limit: 7,
          continue: undefined,
          timeoutSeconds: 30,
          allowWatchBookmarks: false,
          sendInitialEvents: false,
          resourceVersionMatch: undefined,
          answer: "ok",
        },
        {
          kind: "list",
          resource: "endpointslices",
          namespace: ns,
          node: undefined,
          fieldSelector: undefined,
          resourceVersion: undefined,
          limit: undefined,
          continue: undefined,
          timeoutSeconds: undefined,
          allowWatchBookmarks: false,
          sendInitialEvents: false,
          resourceVersionMatch: undefined,
          answer: "status 401",
        },
        {
          kind: "watch",
          resource: "endpointslices",
          namespace: undefined,
          node: undefined,
          fieldSelector: undefined,
          resourceVersion: "1",
          limit: undefined,
          continue: undefined,
          timeoutSeconds: undefined,
          allowWatchBookmarks: false,
          sendInitialEvents: false,
          resourceVersionMatch: undefined,
          answer: "expired",
          expired: true,
        },
      ],
    );
    const times = log.map((r) => r.at);
    assert.deepEqual(
      times,
      [...times].sort((a, b) => a - b),
    );
    assert.ok((times[0] ?? 0) >= start && (times.at(-1) ?? 0) <= performance.now());
  });

  test("stall: no response at all until the stall is turned off, which resets the connection", async () => {
    const ns = freshNamespace();
    api.stall("both");
    const stalledList = api.next("list");
    const l = new Exchange(slicesIn(ns));
    assert.equal((await stalledList).answer, "stalled");
    const stalledWatch = api.next("watch");
    const w = new Exchange(slicesIn(ns, "watch=true"));
    assert.equal((await stalledWatch).answer, "stalled");
    api.stall("list", false);
    assert.deepEqual(await l.closed, { complete: false });
    // The watch is still held: a new list is answered and the watch is not.
    await list(slicesIn(ns));
    api.stall("watch", false);
    assert.deepEqual(await w.closed, { complete: false });
    assert.equal(l.answered || w.answered, false, "a stalled request got response headers");
    assert.equal(api.openWatches, 0);
  });

  test("blackhole: open and new watches get nothing, not even their timeout's end; after it, a new watch catches up", async () => {
    const ns = freshNamespace();
    fill(ns, 1);
    const open = new Exchange(slicesIn(ns, "watch=true&allowWatchBookmarks=true"));
    await open.until((x) => x.events.length === 1);
    const rv = api.resourceVersion;
    api.blackhole();
    api.apply(udpSlice("b", "svc", 53, ["10.0.0.2"], ns));
    api.bookmark();
    const arrived = api.next("watch");
    const silent = new Exchange(slicesIn(ns, `watch=true&resourceVersion=${rv}&timeoutSeconds=1`));
    assert.equal((await silent.response).status, 200);
    assert.equal((await arrived).answer, "blackholed");
    api.closeWatches();
    api.expireWatches();
    api.blackhole(false);
    api.apply(udpSlice("c", "svc", 53, ["10.0.0.3"], ns));
    // Made after the silent watch with the same timeout, so its timer would have fired first.
    const caughtUp = new Exchange(slicesIn(ns, `watch=true&resourceVersion=${rv}&timeoutSeconds=1`));
    assert.deepEqual(await caughtUp.closed, { complete: true });
    assert.deepEqual(
      caughtUp.events.map((e) => [e.type, e.object.metadata?.name]),
      [
        ["ADDED", "b"],
        ["ADDED", "c"],
      ],
    );
    assert.equal(open.events.length, 1);
    assert.equal(silent.text, "");
    assert.equal(api.openWatches, 2);
    api.dropConnections();
    assert.deepEqual(await open.closed, { complete: false });
    assert.deepEqual(await silent.closed, { complete: false });
  });

  test("fail: 429 with Retry-After for the next two lists; 500 and 503 on lists and watches while on", async () => {
    const ns = freshNamespace();
    api.fail("list", { code: 429, times: 2 });
    for (let i = 0; i < 2; i++) {
      const r = await get(slicesIn(ns));
      assert.equal(r.status, 429);
      assert.equal(r.headers["retry-after"], "1");
      const status = JSON.parse(r.body);
      assert.equal(status.reason, "TooManyRequests");
      assert.equal(status.details.retryAfterSeconds, 1);
    }
    await list(slicesIn(ns));
    api.fail("both", { code: 500 });
    const failedWatch = api.next("watch");
    const w = await get(slicesIn(ns, "watch=true"));
    assert.equal(w.status, 500);
    assert.equal(JSON.parse(w.body).reason, "InternalError");
    assert.equal((await failedWatch).answer, "status 500");
    assert.equal((await get(slicesIn(ns))).status, 500);
    api.fail("list", { code: 503, retryAfterSeconds: 3 });
    const unavailable = await get(slicesIn(ns));
    assert.equal(unavailable.status, 503);
    assert.equal(unavailable.headers["retry-after"], "3");
    assert.equal(JSON.parse(unavailable.body).reason, "ServiceUnavailable");
    api.fail("both", false);
    await list(slicesIn(ns));
  });

  test("expireEveryWatch: open watches and every new one end with an ERROR 410 Expired event", async () => {
    const ns = freshNamespace();
    fill(ns, 1);
    const open = new Exchange(slicesIn(ns, "watch=true"));
    await open.until((x) => x.events.length === 1);
    const expired = api.counts.expired;
    api.expireEveryWatch();
    assert.deepEqual(await open.closed, { complete: true });
    for (const query of ["watch=true", `watch=true&resourceVersion=${api.resourceVersion}`]) {
      const w = new Exchange(slicesIn(ns, query));
      assert.deepEqual(await w.closed, { complete: true });
      assert.deepEqual(
        w.events.map((e) => [e.type, e.object.code, e.object.reason]),
        [["ERROR", 410, "Expired"]],
      );
    }
    assert.equal(open.events.at(-1)?.object.code, 410);
    assert.equal(api.counts.expired, expired + 3);
    api.resetFaults();
    const w = new Exchange(slicesIn(ns, "watch=true&timeoutSeconds=1"));
    await w.closed;
    assert.deepEqual(
      w.events.map((e) => e.type),
      ["ADDED"],
    );
  });

  test("cut: the next watch line is written half and the socket destroyed; so is the next list body", async () => {
    const ns = freshNamespace();
    fill(ns, 1);
    const w = new Exchange(slicesIn(ns, "watch=true"));
    await w.until((x) => x.events.length === 1);
    const intact = w.text;
    api.cut("watch");
    api.apply(udpSlice("b", "svc", 53, ["10.0.0.2"], ns));
    assert.deepEqual(await w.closed, { complete: false });
    const half = w.text.slice(intact.length);
    assert.ok(half.length > 0 && !half.includes("\n"), `not half a line: ${half}`);
    assert.ok(half.startsWith('{"type":"ADDED"'));
    // Armed once: the next watch is whole.
    const next = new Exchange(slicesIn(ns, "watch=true&timeoutSeconds=1"));
    assert.deepEqual(await next.closed, { complete: true });
    assert.equal(next.events.length, 2);

    api.cut("list");
    const cutList = api.next("list");
    const l = new Exchange(slicesIn(ns));
    const { headers } = await l.response;
    assert.deepEqual(await l.closed, { complete: false });
    assert.ok(l.text.length > 0 && l.text.length < Number(headers["content-length"]));
    assert.equal((await cutList).answer, "cut");
    assert.deepEqual(names(await list(slicesIn(ns))), ["a", "b"]);
  });

  test("raw objects: served in lists and watch events exactly as given, deleted by remove", async () => {
    const ns = freshNamespace();
    const raw = { addressType: "IPv4", endpoints: [null] };
    const before = api.resourceVersion;
    const w = new Exchange(slicesIn(ns, `watch=true&resourceVersion=${before}`));
    await w.response;
    const rv = api.applyRaw(ns, "bare", raw);
    assert.equal(rv, api.resourceVersion);
    assert.ok(Number(rv) > Number(before));
    api.applyRaw(ns, "number", 42);
    const listed = await list(slicesIn(ns));
    assert.deepEqual(listed.items, [raw, 42]);
    assert.equal(listed.metadata.resourceVersion, api.resourceVersion);
    assert.equal(api.remove(ns, "bare"), true);
    await w.until((x) => x.events.length === 3);
    assert.deepEqual(w.events, [
      { type: "ADDED", object: raw },
      { type: "ADDED", object: 42 },
      { type: "DELETED", object: raw },
    ]);
    assert.deepEqual((await list(slicesIn(ns))).items, [42]);
    w.abort();
  });
});
