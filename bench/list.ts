/**
 * Listing at scale: all UDP sockets of a namespace holding 100,000, in-process against the raw kernel
 * dump, and as whole processes against `ss -uan`; then a `dst IP:PORT` filter matching 500 of them,
 * with and without kernel-side bytecode, against `ss -uan dst IP:PORT`.
 */

import { renderTable, writeJson } from "../src/cli/render/index.js";
import { AF_INET, NETLINK_SOCK_DIAG } from "../src/diag/constants.js";
import { writeInetDumpRequest } from "../src/diag/inet.js";
import { align4, MessageWriter, NLMSG_DONE, NLMSG_ERROR } from "../src/netlink/index.js";
import { fromPath, openNetlinkIn } from "../src/netns/index.js";
import { listSockets } from "../src/sockets/index.js";
import { createNetns, removeNetns } from "../test/kit/index.js";
import { cliProcesses } from "./cli.js";
import { fmt, recordGoal, row, timeFn, timeInTurns, timeProcesses } from "./measure.js";
import { CLI, sceneNote, udpScene } from "./scene.js";

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
  const out = [`listing: one namespace holding ${sceneNote(TOTAL)}`];
  const scene = await udpScene("bench-list", TOTAL, TARGET, MATCHING);
  try {
    const { name, path } = scene.netns;
    let rawCount = 0;
    let count = 0;
    const [raw, lib] = await timeInTurns([
      () => {
        rawCount = rawDump(path);
      },
      () => {
        count = listSockets({ netns: path, protocols: ["udp"], families: ["inet"] }).length;
      },
    ]);
    out.push(
      "  (medians of 15 rounds taken in turns, after 3 untimed; the mean beside, and the collections a",
      "  listing pays on average: a young-generation collection lands in some rounds only)",
      row(
        `raw kernel dump, receive only (${rawCount} sockets)`,
        fmt.ms(raw!.median),
        fmt.rate(rawCount, raw!.median),
      ),
      row(
        `listSockets in-process (${count} sockets)`,
        fmt.ms(lib!.median),
        `${fmt.ratio(lib!.median, raw!.median)} raw (goal <= 1.3); mean ${fmt.ms(lib!.mean)} (${fmt.ratio(lib!.mean, raw!.mean)}), collections ${fmt.ms(lib!.gcMean)}`,
      ),
      row(
        "",
        "",
        `page faults a round: ${lib!.faultsMean.toFixed(0)} (the raw dump's: ${raw!.faultsMean.toFixed(0)})`,
      ),
    );
    recordGoal("listSockets of 100,000 / raw kernel dump, in-process", lib!.median / raw!.median, 1.3);

    out.push("", "  output: writing the lines of those sockets, in-process (cost per socket)");
    const sockets = listSockets({ netns: path, protocols: ["udp"], families: ["inet"], states: ["all"] });
    const display = { options: false, extended: false, memory: false, info: false, processes: false };
    // Judged against the raw kernel dump of as many sockets, measured above in this run.
    const rawPerSocket = raw!.median / rawCount;
    const table = timeFn(() => renderTable(sockets, { display, header: true, netnsColumn: false }));
    const tableRatio = table / sockets.length / rawPerSocket;
    out.push(
      row(
        "table (ls)",
        fmt.perItem(table, sockets.length),
        `${tableRatio.toFixed(2)} x raw dump (goal <= 1.0)`,
      ),
    );
    recordGoal("table lines / raw kernel dump, per socket", tableRatio, 1.0);
    for (const format of ["json", "ndjson"] as const) {
      const json = timeFn(() => writeJson(sockets, format, () => {}));
      const label = format === "json" ? "JSON (-j)" : "NDJSON (--ndjson)";
      const ratio = json / sockets.length / rawPerSocket;
      out.push(row(label, fmt.perItem(json, sockets.length), `${ratio.toFixed(2)} x raw dump (goal <= 1.5)`));
      recordGoal(`${label} lines / raw kernel dump, per socket`, ratio, 1.5);
    }

    const empty = await createNetns("bench-empty");
    try {
      out.push("", ...cliProcesses(name, TOTAL, empty.name));
    } finally {
      await removeNetns(empty.name);
    }

    out.push(
      "",
      `filter: dst ${TARGET.address}:${TARGET.port} (${MATCHING} of ${TOTAL.toLocaleString("en-US")} match)`,
    );
    const filter = `dst ${TARGET.address}:${TARGET.port}`;
    const [ssF, lsF] = timeProcesses([
      ["ss", "-N", name, "-uan", ...filter.split(" ")],
      [process.execPath, CLI, "ls", "-N", name, "-u", "-a", ...filter.split(" ")],
    ]) as [number, number];
    out.push(row(`ss -uan ${filter} (whole process)`, fmt.ms(ssF)));
    // No goal against ss here: Node's own start-up (node -e 0, above) is of the order of ss's whole run.
    out.push(
      row(
        `sockdiag ls -u -a ${filter} (whole process)`,
        fmt.ms(lsF),
        `${fmt.ratio(lsF, ssF)} ss (no goal: see node -e 0 above)`,
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
