/**
 * `sockdiag watch [-t] [-u] [-4|-6] [-N NAME | --all-netns] [-j|--ndjson] [FILTER]`: print each
 * socket as the kernel frees it (ss -E), until interrupted; SIGINT and SIGTERM end it with status 0.
 */

import type { InetFamily } from "../../diag/socket.js";
import { SocketWatch } from "../../sockets/index.js";
import { type CommandSpec, EXIT_OK, parseCommand, writeOut } from "../io/index.js";
import { formatFromArgs, renderSockets, reportNamespaces } from "../output/index.js";
import { NETNS_DIR_OPTION, NETNS_OPTIONS, namespaceFromArgs } from "../select/index.js";
import type { Command } from "./index.js";

export const WATCH: CommandSpec = {
  name: "watch",
  usage: "[-t] [-u] [-4|-6] [-N NAME | --netns PATH | --pid PID | --all-netns] [-j|--ndjson] [FILTER]",
  summary: "Print sockets as the kernel frees them (ss -E), until interrupted. Needs CAP_NET_ADMIN.",
  options: [
    { name: "tcp", short: "t", help: "TCP sockets (default: TCP and UDP)" },
    { name: "udp", short: "u", help: "UDP sockets" },
    { name: "ipv4", short: "4", help: "IPv4 sockets only" },
    { name: "ipv6", short: "6", help: "IPv6 sockets only" },
    ...NETNS_OPTIONS,
    { name: "all-netns", help: "in this namespace and every other, joining new ones as they appear" },
    NETNS_DIR_OPTION,
    { name: "json", short: "j", help: "one JSON object per line (as --ndjson: the stream has no end)" },
    { name: "ndjson", help: "one JSON object per line" },
    { name: "no-header", short: "H", help: "no table header" },
  ],
  details: "FILTER: ss's filter language, checked on each socket, e.g.  dst 10.0.0.5:53",
};

/** How long one wait for news lasts before signals are looked at. */
const WAIT_MS = 200;

export async function runWatch(argv: readonly string[]): Promise<number> {
  const { values, positionals } = parseCommand(WATCH, argv);
  const protocols = (["tcp", "udp"] as const).filter((p) => values[p]);
  const families: InetFamily[] = [];
  if (values.ipv4) families.push("inet");
  if (values.ipv6) families.push("inet6");
  using watch = new SocketWatch({
    ...(protocols.length > 0 ? { protocols } : {}),
    ...(families.length > 0 ? { families } : {}),
    ...namespaceFromArgs(values),
    ...(positionals.some((w) => w.trim() !== "") ? { filter: positionals } : {}),
  });
  reportNamespaces(watch.failures, watch.notes);
  process.stderr.write(`watching ${watch.size} namespace${watch.size === 1 ? "" : "s"}; Ctrl-C to stop\n`);
  const format = formatFromArgs(values) === "table" ? "table" : "ndjson";
  const display = { options: false, extended: false, memory: false, info: false, processes: false };
  let header = !values["no-header"];
  let stopped = false;
  const stop = () => {
    stopped = true;
  };
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  try {
    let reported = watch.failures.length;
    let noted = watch.notes.length;
    while (!stopped) {
      const freed = watch.poll(WAIT_MS);
      if (freed.length > 0) {
        writeOut(
          renderSockets(freed, format, { display, header, netnsColumn: values["all-netns"] === true }),
        );
        header = false;
      }
      if (watch.failures.length > reported || watch.notes.length > noted) {
        reportNamespaces(watch.failures.slice(reported), watch.notes.slice(noted));
        reported = watch.failures.length;
        noted = watch.notes.length;
      }
      // A turn of the event loop: a signal's handler runs here.
      await new Promise((resolve) => setImmediate(resolve));
    }
  } finally {
    process.off("SIGINT", stop);
    process.off("SIGTERM", stop);
  }
  return EXIT_OK;
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: WATCH, run: runWatch };
