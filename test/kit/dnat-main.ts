/**
 * The child of the DNAT scene, run inside the scene's namespace: two UDP backends A and B bound on
 * 127.0.0.1, and one client connected to the virtual IP. Each stdin line "send TOKEN" makes the
 * client send TOKEN; each datagram a backend receives is reported as a JSON line {"got":"A",
 * "token":...}; a failed send as {"sendError":CODE}. Argv: portA portB vip vport.
 */
import { createSocket, type Socket } from "node:dgram";
import { createInterface } from "node:readline";

const [portA, portB, vip, vport] = process.argv.slice(2) as [string, string, string, string];
const say = (o: object) => process.stdout.write(`${JSON.stringify(o)}\n`);

function backend(name: string, port: number): Promise<Socket> {
  const s = createSocket("udp4");
  s.on("message", (msg) => say({ got: name, token: msg.toString() }));
  return new Promise((resolve) => s.bind(port, "127.0.0.1", () => resolve(s)));
}

const a = await backend("A", Number(portA));
const b = await backend("B", Number(portB));
const client = createSocket("udp4");
client.on("error", (err) => say({ sendError: (err as NodeJS.ErrnoException).code ?? err.message }));
await new Promise<void>((resolve) => client.connect(Number(vport), vip, resolve));
const local = client.address();
say({ ready: true, clientPort: local.port });
createInterface({ input: process.stdin }).on("line", (line) => {
  const token = /^send (\S+)$/.exec(line)?.[1];
  if (token)
    client.send(
      token,
      (err) => err && say({ sendError: (err as NodeJS.ErrnoException).code ?? err.message }),
    );
  if (line === "stop") {
    client.close();
    a.close();
    b.close();
  }
});
