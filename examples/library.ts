import {
  BackendTerminator,
  destroySocket,
  destroySockets,
  errors,
  iterateSockets,
  listSockets,
  netnsFromName,
  terminateUDPConnectionsToBackend,
} from "sockdiag";

// List: protocols, families, states (ss names and groups), filter (ss text, tree, or object), netns.
const dns = listSockets({ protocols: ["udp"], states: ["established"], filter: { dst: "10.0.0.5", dport: 53 } });
for (const s of dns) console.log(s.src, s.sport, "->", s.dst, s.dport, s.cookie);

// Stream any number of sockets with flat memory; with netns "all", failed namespaces are collected.
const all = iterateSockets({ protocols: ["tcp"], netns: "all", filter: "sport = :443" });
for (const s of all) console.log(s.netns?.label ?? "(host)", s.state, s.dst);
for (const f of all.failures) console.error(f.netns, f.error.code);
for (const n of all.notes) console.error(n.netns, "skipped:", n.skipped);

// Destroy, with a veto per socket (it answers true or false; anything else ends the run with
// PredicateError); every socket's outcome is in the report, which balances:
// matched = destroyed + wouldDestroy + gone + failed.length + skipped (a dryRun counts
// wouldDestroy, conntrack's wouldDelete, and leaves destroyed/deleted at 0).
const report = destroySockets({
  protocols: ["udp"],
  netns: "pod-a",
  filter: "dst 10.0.0.5:53",
  predicate: (s) => s.cookie !== 42n,
});
console.log(report.matched, report.destroyed, report.gone, report.failed.length, report.stops);

// One socket, exactly (by cookie), in the namespace it was listed in: a plain copy works too.
for (const s of listSockets({ protocols: ["udp"], netns: "pod-a", filter: "dport = :53" }))
  console.log(destroySocket(structuredClone(s)));

// The headline job, in one call or with a terminator built once.
terminateUDPConnectionsToBackend("10.0.0.5:53");
const terminator = new BackendTerminator({
  netnsDirs: ["/run/netns"],
  protocol: "udp",
  predicate: (s) => s.cookie !== 0n, // e.g. check a socket-LB map by s.cookie
  logger: { info: console.log, warn: console.warn },
});
const result = terminator.terminate({ address: "10.0.0.5", port: 53 });
console.log(result.total.destroyed, result.namespaces.length, result.failures, result.ok);

// Many backends in one pass: each namespace entered once; counts per backend and per namespace.
const batch = terminator.terminateMany([
  { address: "10.0.0.5", port: 53 },
  { address: "fd00::6", port: 53, protocol: "any" },
]);
for (const b of batch.backends) console.log(b.backend.address, b.total.destroyed);

// One BPF pass over every task's files finds the sockets; only the namespaces that need it are
// entered ("auto", the default: where it can run and pays; "on": or OnePassUnavailableError;
// "off": walk every namespace with sock_diag).
const fast = new BackendTerminator().terminateMany([{ address: "10.0.0.5", port: 53 }]);
console.log(fast.onePass?.used, fast.onePass?.message, fast.namespaces.filter((n) => n.ruledOut).length);

// Namespace handles (current, by name/path/pid, created, pinned); the caller closes them.
using ns = netnsFromName("pod-a");
console.log(ns.ino, listSockets({ netns: ns, protocols: ["udp"] }).length);

// Every error is a SockdiagError with a stable code; the classes are in `errors`.
try {
  listSockets({ netns: "no-such-namespace" });
} catch (err) {
  if (!(err instanceof errors.SockdiagError)) throw err;
  console.log(err.code); // ERR_SOCKDIAG_NETNS_NOT_FOUND
}
