/** `sockdiag ls [SELECT] [FILTER]`: list sockets, as ss does, as a table or JSON. */
import type { Protocol, Socket } from "../../diag/socket.js";
import { findSocketOwners, iterateSockets } from "../../sockets/index.js";
import { type CommandSpec, parseCommand } from "../options.js";
import { formatFromArgs, OUTPUT_OPTIONS, renderSockets, writeJson, writeOut } from "../output.js";
import { anyRealFailure, reportNamespaceFailures } from "../report.js";
import { selectionFromArgs, selectOptions } from "../select.js";
import { EXIT_FAILED, EXIT_OK } from "../usage.js";

export const LS: CommandSpec = {
  name: "ls",
  usage: "[SELECT] [state STATE]... [exclude STATE]... [FILTER]",
  summary: "List sockets. Without -a only connected sockets are shown, as ss does.",
  options: [...selectOptions("all"), ...OUTPUT_OPTIONS],
  details: [
    "STATE: established, syn-sent, syn-recv, fin-wait-1, fin-wait-2, time-wait, close (unconnected),",
    "       close-wait, last-ack, listening, closing, or a group: all, connected, synchronized, bucket, big.",
    "FILTER: ss's filter language, e.g.  dst 10.0.0.5:53   'dport = :443 and not src 127.0.0.1'",
  ].join("\n"),
};

/**
 * What ss lists without a protocol flag (misc/ss.c filter_default_dbs), as far as sockdiag can list
 * it: every inet table and unix. Those this kernel has no sock_diag handler for are left out.
 */
const DEFAULT_PROTOCOLS: readonly Protocol[] = ["tcp", "udp", "raw", "sctp", "mptcp", "unix"];

export function runLs(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(LS, argv);
  const selection = selectionFromArgs(values, positionals, {
    allStatesKey: "all",
    protocols: DEFAULT_PROTOCOLS,
  });
  // ss lists what the kernel has; protocols named explicitly must exist (an error says which not).
  if (!selection.explicitProtocols) selection.query.ignoreUnsupported = true;
  const iteration = iterateSockets(selection.query);
  const format = formatFromArgs(values);
  if (format !== "table" && !selection.display.processes) {
    // JSON streams: a 100,000-socket listing never holds more than one chunk of lines.
    writeJson(iteration, format, writeOut);
  } else {
    const sockets: Socket[] = iteration.toArray();
    const owners = selection.display.processes
      ? findSocketOwners(new Set(sockets.map((s) => s.inode)))
      : undefined;
    writeOut(
      renderSockets(sockets, format, {
        display: selection.display,
        header: !values["no-header"],
        netnsColumn: selection.query.netns === "all",
        owners,
      }),
    );
  }
  reportNamespaceFailures(iteration.failures);
  return anyRealFailure(iteration.failures) ? EXIT_FAILED : EXIT_OK;
}
