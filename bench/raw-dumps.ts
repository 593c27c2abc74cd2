/**
 * Run by the terminate bench in processes of its own, several side by side (so that `taskset` can
 * pin them to one core or leave them two): the kernel's part of a termination alone — one IPv4 UDP
 * dump in each of its namespaces, each received whole and not parsed. Each line on stdin starts a
 * round; it answers `{ start, end }` (epoch milliseconds) on one line, so the caller can tell the
 * wall time of processes that ran at once.
 *
 * argv: the namespaces' pinned paths.
 */
import { createInterface } from "node:readline";
import { AF_INET, NETLINK_SOCK_DIAG } from "../src/diag/constants.js";
import { writeInetDumpRequest } from "../src/diag/inet.js";
import { align4, MessageWriter, NLMSG_DONE, NLMSG_ERROR } from "../src/netlink/index.js";
import { fromPath, type NetNS, openNetlinkIn } from "../src/netns/index.js";
import { IPPROTO_UDP } from "../src/sys/socket.js";

const namespaces: NetNS[] = process.argv.slice(2).map((path) => fromPath(path));
const request = new MessageWriter(Buffer.alloc(256));

/** Sockets one namespace's dump answered. */
function dumpUdp(netns: NetNS): number {
  using conn = openNetlinkIn(netns, NETLINK_SOCK_DIAG);
  const seq = conn.nextSeq();
  writeInetDumpRequest(request.reset(), seq, {
    family: AF_INET,
    protocol: IPPROTO_UDP,
    ext: 0,
    states: 0xffffffff,
  });
  conn.send(request.buf, request.length);
  let sockets = 0;
  for (;;) {
    const n = conn.receive("raw UDP dump");
    for (let o = 0; o < n; o += align4(conn.recvBuf.readUInt32LE(o))) {
      const type = conn.recvBuf.readUInt16LE(o + 4);
      if (type === NLMSG_DONE || type === NLMSG_ERROR) return sockets;
      sockets++;
    }
  }
}

for await (const _ of createInterface({ input: process.stdin })) {
  const start = performance.timeOrigin + performance.now();
  let sockets = 0;
  for (const netns of namespaces) sockets += dumpUdp(netns);
  const end = performance.timeOrigin + performance.now();
  process.stdout.write(`${JSON.stringify({ start, end, sockets })}\n`);
}
