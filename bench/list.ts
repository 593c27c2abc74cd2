/**
 * Listing at scale: all UDP sockets of a namespace holding 100,000, in-process against the raw kernel
 * dump, and as whole processes against `ss -uan`; then a `dst IP:PORT` filter matching 500 of them,
 * with and without kernel-side bytecode, against `ss -uan dst IP:PORT`.
 */
import { AF_INET, NETLINK_SOCK_DIAG } from "../src/diag/constants.js";
import { writeInetDumpRequest } from "../src/diag/inet.js";
import { align4, MessageWriter, NLMSG_DONE, NLMSG_ERROR } from "../src/netlink/index.js";
import { fromPath, openNetlinkIn } from "../src/netns/index.js";
import { listSockets } from "../src/sockets/index.js";
import { fmt, row, timeFn, timeProcess } from "./measure.js";
import { CLI, udpScene } from "./scene.js";

const TOTAL = 100_000;
const TARGET = { address: "127.0.0.10", port: 5353 };
const MATCHING = 500;

/** Receive a whole UDP dump without parsing a socket: the floor any listing stands on. */
function rawDump(nsPath: string): number {
  using ns = fromPath(nsPath);
  using conn = openNetlinkIn(ns, NETLINK_SOCK_DIAG);
  const w = new MessageWriter(Buffer.alloc(256));
  const seq = conn.nextSeq();
  writeInetDumpRequest(w, seq, { family: AF_INET, protocol: 17, ext: 0, states: 0xffffffff });
  conn.send(w.buf, w.length);
  let messages = 0;
  for (;;) {
    const n = conn.receive("raw dump");
    for (let o = 0; o < n; o += align4(conn.recvBuf.readUInt32LE(o))) {
      const type = conn.recvBuf.readUInt16LE(o + 4);
      if (type === NLMSG_DONE || type === NLMSG_ERROR) return messages;
      messages++;
    }
  }
}

export async function benchList(): Promise<string[]> {
  const out = [`listing: one namespace holding ${TOTAL.toLocaleString("en-US")} UDP sockets`];
  const scene = await udpScene("bench-list", TOTAL, TARGET, MATCHING);
  try {
    const { name, path } = scene.netns;
    let count = 0;
    const raw = timeFn(() => {
      count = rawDump(path);
    });
    out.push(row(`raw kernel dump, receive only (${count} sockets)`, fmt.ms(raw), fmt.rate(count, raw)));
    const lib = timeFn(() => {
      count = listSockets({ netns: path, protocols: ["udp"], families: ["inet"] }).length;
    });
    out.push(
      row(
        `listSockets in-process (${count} sockets)`,
        fmt.ms(lib),
        `${fmt.rate(count, lib)}  ${fmt.ratio(lib, raw)} raw (goal <= 1.25)`,
      ),
    );

    const ss = timeProcess("ss", ["-N", name, "-uan"]);
    out.push(row("ss -uan (whole process)", fmt.ms(ss), fmt.rate(TOTAL, ss)));
    const ls = timeProcess(process.execPath, [CLI, "ls", "-N", name, "-u", "-a"]);
    out.push(row("sockdiag ls -u -a (whole process)", fmt.ms(ls), `${fmt.ratio(ls, ss)} ss (goal <= 1.3)`));
    const lsj = timeProcess(process.execPath, [CLI, "ls", "-N", name, "-u", "-a", "-j"]);
    out.push(
      row("sockdiag ls -u -a -j (whole process)", fmt.ms(lsj), `${fmt.ratio(lsj, ss)} ss (goal <= 1.5)`),
    );
    const node = timeProcess(process.execPath, ["-e", "0"]);
    out.push(row("node -e 0 (Node's own start-up, for reference)", fmt.ms(node)));

    out.push(
      "",
      `filter: dst ${TARGET.address}:${TARGET.port} (${MATCHING} of ${TOTAL.toLocaleString("en-US")} match)`,
    );
    const filter = `dst ${TARGET.address}:${TARGET.port}`;
    const ssF = timeProcess("ss", ["-N", name, "-uan", ...filter.split(" ")]);
    out.push(row(`ss -uan ${filter} (whole process)`, fmt.ms(ssF)));
    const lsF = timeProcess(process.execPath, [CLI, "ls", "-N", name, "-u", "-a", ...filter.split(" ")]);
    out.push(
      row(
        `sockdiag ls -u -a ${filter} (whole process)`,
        fmt.ms(lsF),
        `${fmt.ratio(lsF, ssF)} ss (goal <= 1)`,
      ),
    );
    const withBc = timeFn(() => {
      count = listSockets({ netns: path, protocols: ["udp"], filter }).length;
    });
    out.push(row(`listSockets with kernel bytecode (${count} sockets)`, fmt.ms(withBc)));
    const withoutBc = timeFn(() => {
      count = listSockets({ netns: path, protocols: ["udp"], filter, kernelFilter: false }).length;
    });
    out.push(
      row(
        `listSockets, predicate only, no bytecode (${count} sockets)`,
        fmt.ms(withoutBc),
        `${fmt.ratio(withoutBc, withBc)} with bytecode`,
      ),
    );
  } finally {
    await scene.stop();
  }
  return out;
}
