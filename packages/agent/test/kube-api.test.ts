/**
 * EndpointSliceApi against a bare HTTP server that writes exactly what a test says, where the
 * stand-in API server would not: a watch line delivered in pieces.
 */
import assert from "node:assert/strict";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { describe, test } from "node:test";
import { KubeConfig } from "@kubernetes/client-node";
import { ApiStatusError, EndpointSliceApi, type WatchEvent } from "../src/kube-api.js";
import { until } from "./kit/waits.js";

function kubeconfigFor(port: number): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: "c", server: `http://127.0.0.1:${port}`, skipTLSVerify: true }],
    users: [{ name: "u" }],
    contexts: [{ name: "x", cluster: "c", user: "u" }],
    currentContext: "x",
  });
  return kc;
}

describe("EndpointSliceApi", () => {
  test("an error answer that never ends is read only so far: the request fails, the answer is dropped", async () => {
    const chunk = Buffer.alloc(64 * 1024, "x");
    let written = 0;
    let gone = false;
    const server = createServer((_req, res) => {
      res.writeHead(500, { "content-type": "application/json" });
      res.once("close", () => {
        gone = true;
      });
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) written += chunk.length;
        if (!res.destroyed) res.once("drain", pump);
      };
      pump();
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const api = new EndpointSliceApi(kubeconfigFor((server.address() as AddressInfo).port), {
        maxObjectBytes: 1024,
        maxListBytes: 4096,
      });
      await assert.rejects(
        api.list({ resourceVersion: "0" }, new AbortController().signal, () => {}),
        (err: unknown) => err instanceof ApiStatusError && err.code === 500,
      );
      await until(() => gone, 20_000, "the agent to hang up on the endless answer");
      assert.ok(written < 64 << 20, `the server wrote ${written} bytes before the agent hung up`);
    } finally {
      // Had it not hung up, its connection would keep the file running.
      server.closeAllConnections();
      server.close();
    }
  });

  test("a watch line split inside a UTF-8 character, and between lines, comes out whole", async () => {
    const line = Buffer.from(
      `${JSON.stringify({ type: "ADDED", object: { metadata: { name: "café-ü" } } })}\n`,
    );
    const cut = line.indexOf(Buffer.from("é")) + 1; // between the two bytes of "é"
    const server = createServer((_req, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      res.write(line.subarray(0, cut));
      // The rest once the first piece has surely gone out on its own.
      setTimeout(() => res.end(Buffer.concat([line.subarray(cut), line])), 50);
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const kc = kubeconfigFor((server.address() as AddressInfo).port);
      const events: WatchEvent[] = [];
      await new EndpointSliceApi(kc, { maxObjectBytes: 1024, maxListBytes: 4096 }).watch(
        { resourceVersion: "1", timeoutSeconds: 1 },
        new AbortController().signal,
        (e) => {
          events.push(e);
        },
      );
      assert.deepEqual(
        events.map((e) => (e.object as { metadata: { name: string } }).metadata.name),
        ["café-ü", "café-ü"],
      );
    } finally {
      server.close();
    }
  });
});
