import { AbortError, BackendTerminator, destroySockets, iterateSockets, listSockets, watchSockets } from "sockdiag/promises";

// The same calls, off the caller's thread; every one takes a signal.
const udp = await listSockets({ protocols: ["udp"], signal: AbortSignal.timeout(5000) });
console.log(udp.length);
for await (const s of iterateSockets({ protocols: ["tcp"], netns: "all" })) if (s.dport === 443) break;

// Aborting stops sending, finishes the batch in flight, and says what was done.
const controller = new AbortController();
try {
  const report = await destroySockets({ protocols: ["udp"], filter: "dst 10.0.0.5:53", signal: controller.signal });
  console.log(report.destroyed);
} catch (err) {
  if (!(err instanceof AbortError)) throw err;
  console.log("stopped; done so far:", err.report);
}

const result = await new BackendTerminator({ netnsDirs: ["/run/netns"] }).terminate({ address: "10.0.0.5", port: 53 });
console.log(result.total.destroyed, result.ok);

// Sockets as the kernel frees them (ss -E), here for one second.
const watch = watchSockets({ protocols: ["udp"], filter: "dport = :53", signal: AbortSignal.timeout(1000) });
await watch.ready;
try {
  for await (const s of watch) console.log("closed", s.src, s.sport, "->", s.dst, s.dport, s.cookie);
} catch (err) {
  if (!(err instanceof AbortError)) throw err;
}
