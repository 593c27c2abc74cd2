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
import { EndpointSliceApi, type WatchEvent } from "../src/kube-api.js";

describe("EndpointSliceApi", () => {
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
      const kc = new KubeConfig();
      kc.loadFromOptions({
        clusters: [
          {
            name: "c",
            server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
            skipTLSVerify: true,
          },
        ],
        users: [{ name: "u" }],
        contexts: [{ name: "x", cluster: "c", user: "u" }],
        currentContext: "x",
      });
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
