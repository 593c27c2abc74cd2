/**
 * The agent's HTTP endpoints: /metrics (Prometheus text), /healthz (liveness: 200 while the process
 * works), /readyz (readiness: 200 once a first list was applied whole, and while lists and watches
 * work and a kubeconfig exec credential plugin answers).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";

/** What the endpoints report on. */
export interface Health {
  live(): boolean;
  ready(): boolean;
}

/** A listening address "HOST:PORT" ("[::1]:9813" for IPv6), checked. */
export interface ListenAddress {
  host: string;
  port: number;
}

export class AgentHttpServer {
  private readonly server: Server;

  constructor(registry: Registry, health: Health) {
    this.server = createServer((req, res) => {
      const path = (req.url ?? "/").split("?")[0];
      if (req.method !== "GET" && req.method !== "HEAD") {
        res.writeHead(405, { allow: "GET, HEAD" }).end();
        return;
      }
      if (path === "/metrics") {
        registry.metrics().then(
          (text) => res.writeHead(200, { "content-type": registry.contentType }).end(text),
          (err: Error) => res.writeHead(500, { "content-type": "text/plain" }).end(`${err.message}\n`),
        );
        return;
      }
      const check = path === "/healthz" ? health.live() : path === "/readyz" ? health.ready() : undefined;
      if (check === undefined) {
        res.writeHead(404, { "content-type": "text/plain" }).end("not found\n");
        return;
      }
      res.writeHead(check ? 200 : 503, { "content-type": "text/plain" }).end(check ? "ok\n" : "not ok\n");
    });
  }

  /** Listen; resolves with the address bound (port 0 picks a free one). */
  listen(address: ListenAddress): Promise<ListenAddress> {
    return new Promise((resolve, reject) => {
      this.server.once("error", reject);
      this.server.listen(address.port, address.host, () => {
        this.server.off("error", reject);
        const bound = this.server.address() as AddressInfo;
        resolve({ host: bound.address, port: bound.port });
      });
    });
  }

  close(): Promise<void> {
    return new Promise((resolve) => {
      this.server.close(() => resolve());
      this.server.closeAllConnections();
    });
  }
}
