import { deleteConntrack, iterateConntrack, listConntrack } from "sockdiag";

// Entries of one namespace or all ("all"), by protocol, family, original or reply address and
// port, zone, mark. Each: both tuples, protocol, TCP state, status flags, timeout, mark, zone, id.
const dnated = listConntrack({ protocol: "udp", reply: { src: "10.244.1.7", sport: 53 } });
for (const e of iterateConntrack({ netns: "all", original: { dst: "10.96.0.10", dport: 53 } }))
  console.log(e.netns ?? "(host)", e.original.src, "->", e.reply.src, e.flags);

// Delete exactly (each entry's own tuple and id), in batches; per namespace and in total:
// matched = deleted + wouldDelete + gone + failed.length + skipped.
const r = deleteConntrack({ netns: "pod-a", protocol: "udp", reply: { src: "10.244.1.7", sport: 53 } });
console.log(r.deleted, r.gone, r.failed, r.namespaces, r.notes);
// Several selections in one dump per namespace (how the terminator serves many backends at once):
deleteConntrack({ protocol: "udp", anyOf: [{ reply: { src: "10.244.1.7", sport: 53 } }, { reply: { src: "fd00::7", sport: 53 } }] });
