/**
 * One "node" of the demo scene, run inside one network namespace: two UDP backends on loopback
 * (A on :15353, B on :15354) and three clients — one IPv4 and one IPv6 (v4-mapped) connected to A,
 * one IPv4 connected to B — and, given a Service address as argv[3] ("IP:PORT"), a fourth client
 * connected to it (the namespace's nftables DNATs it to a backend). Each client pings every 200 ms.
 * Events go to stdout as JSON lines; a client reports the first reply of each backend it hears.
 * stdin commands: "blackhole" (backend A stops answering, as a removed backend would), "exit".
 * A client whose socket is destroyed sees ECONNABORTED and reconnects to the live backend B.
 */
import dgram from "node:dgram";
import { createInterface } from "node:readline";

const label = process.argv[2] ?? "(host)";
const service = process.argv[3];
const PORT_A = 15353;
const PORT_B = 15354;
const PING_MS = 200;

function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify({ node: label, ...event })}\n`);
}

let blackholed = false;
function backend(name: string, port: number): dgram.Socket {
  const s = dgram.createSocket("udp4");
  s.on("message", (_msg, from) => {
    if (name === "A" && blackholed) return;
    s.send(`pong from ${name}`, from.port, from.address);
  });
  s.bind(port, "127.0.0.1");
  return s;
}

interface Client {
  name: string;
  type: "udp4" | "udp6";
  host: string;
  port: number;
  socket?: dgram.Socket;
  lastReply: number;
  timedOut: boolean;
  replies: number;
  errors: string[];
}

function connect(c: Client): void {
  const s = dgram.createSocket(c.type);
  c.socket = s;
  c.lastReply = Date.now();
  c.timedOut = false;
  let heard: string | undefined;
  s.on("message", (msg) => {
    c.lastReply = Date.now();
    c.replies++;
    if (heard !== msg.toString()) emit({ client: c.name, event: "reply", from: msg.toString() });
    heard = msg.toString();
    c.timedOut = false;
  });
  s.on("error", (err: NodeJS.ErrnoException) => {
    if (c.socket !== s) return; // a late error of a socket already replaced
    emit({ client: c.name, event: "error", code: err.code, backend: `${c.host}:${c.port}` });
    c.errors.push(err.code ?? err.message);
    c.socket = undefined;
    s.close();
    // A destroyed socket reports ECONNABORTED on its next read (EDESTADDRREQ if a send comes first).
    if (err.code === "ECONNABORTED" || err.code === "EDESTADDRREQ") {
      // The load balancer says our backend is gone: reconnect to the live one.
      c.host = c.type === "udp6" ? "::ffff:127.0.0.1" : "127.0.0.1";
      c.port = PORT_B;
      connect(c);
      emit({ client: c.name, event: "reconnected", backend: `${c.host}:${c.port}` });
    }
  });
  s.connect(c.port, c.host, () =>
    emit({ client: c.name, event: "connected", backend: `${c.host}:${c.port}`, localPort: s.address().port }),
  );
}

const backends = [backend("A", PORT_A), backend("B", PORT_B)];
const clients: Client[] = [
  {
    name: "client-1 (IPv4 -> A)",
    type: "udp4",
    host: "127.0.0.1",
    port: PORT_A,
    lastReply: 0,
    timedOut: false,
    replies: 0,
    errors: [],
  },
  {
    name: "client-2 (IPv6 v4-mapped -> A)",
    type: "udp6",
    host: "::ffff:127.0.0.1",
    port: PORT_A,
    lastReply: 0,
    timedOut: false,
    replies: 0,
    errors: [],
  },
  {
    name: "client-3 (IPv4 -> B)",
    type: "udp4",
    host: "127.0.0.1",
    port: PORT_B,
    lastReply: 0,
    timedOut: false,
    replies: 0,
    errors: [],
  },
];
if (service) {
  const [host, port] = service.split(":") as [string, string];
  clients.push({
    name: `client-4 (IPv4 -> Service ${service})`,
    type: "udp4",
    host,
    port: Number(port),
    lastReply: 0,
    timedOut: false,
    replies: 0,
    errors: [],
  });
}
Promise.all(backends.map((b) => new Promise((resolve) => b.once("listening", resolve)))).then(() => {
  for (const c of clients) connect(c);
  emit({ event: "ready" });
});

const timer = setInterval(() => {
  for (const c of clients) {
    const s = c.socket;
    if (!s) continue;
    try {
      s.send("ping");
    } catch {
      // not connected yet, or closed after an error: the next tick retries
    }
    if (!c.timedOut && Date.now() - c.lastReply > 3 * PING_MS) {
      c.timedOut = true;
      emit({ client: c.name, event: "no-reply", backend: `${c.host}:${c.port}` });
    }
  }
}, PING_MS);

createInterface({ input: process.stdin }).on("line", (line) => {
  if (line === "blackhole") {
    blackholed = true;
    emit({ event: "backend-A-gone" });
  } else if (line === "status") {
    for (const c of clients) {
      emit({
        client: c.name,
        event: "status",
        backend: `${c.host}:${c.port}`,
        replies: c.replies,
        errors: c.errors,
      });
    }
  } else if (line === "exit") {
    clearInterval(timer);
    for (const c of clients) c.socket?.close();
    for (const b of backends) b.close();
    process.exit(0);
  }
});
process.stdin.on("end", () => process.exit(0));
