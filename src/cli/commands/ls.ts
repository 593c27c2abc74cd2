/** `sockdiag ls [SELECT] [FILTER]`: list sockets, as ss does, as a table or JSON. */

import type { Socket } from "../../diag/socket.js";
import { HOST_NETNS_NAME, type NamespaceSelection } from "../../netns/index.js";
import { findSocketOwners, iterateSockets } from "../../sockets/index.js";
import { type CommandSpec, EXIT_FAILED, EXIT_OK, parseCommand, UsageError, writeOut } from "../io/index.js";
import {
  type Format,
  formatFromArgs,
  OUTPUT_OPTIONS,
  renderSockets,
  reportNamespaces,
} from "../output/index.js";
import { escapeText, TableWriter, writeJson } from "../render/index.js";
import { cgroupsFor, selectionFromArgs, selectOptions } from "../select/index.js";
import type { Command } from "./index.js";
import { DESTROY_ALL, KILL_TABLES } from "./kill-rules.js";
import { formatSummary, readSummaries } from "./ls-summary.js";

/**
 * What ss lists without a table or family flag (misc/ss.c: `-A all`): tcp, udp, raw, sctp, mptcp,
 * unix, packet, netlink, vsock and xdp. Those this kernel has no sock_diag handler for are left out.
 */
const DEFAULT_TABLES: readonly string[] = ["all"];

export const LS: CommandSpec = {
  name: "ls",
  usage: "[SELECT] [state STATE]... [exclude STATE]... [FILTER]",
  summary: "List sockets. Without -a only connected sockets are shown, as ss does.",
  options: [
    ...selectOptions(),
    ...OUTPUT_OPTIONS,
    {
      name: "summary",
      short: "s",
      help: "the namespace's socket counters, as ss -s prints them (-j: as JSON)",
    },
    { name: "kill", short: "K", help: "destroy what is selected, as ss -K: the rules of `sockdiag kill`" },
    {
      name: "verbose",
      help: "also say which protocols this kernel cannot list (no sock_diag handler); -v is ss's --version",
    },
  ],
  details: [
    "Protocols without -t/-u/-w/-x/-M/-S/-0/-A/-f...: tcp, udp, raw, sctp, mptcp, unix, packet, netlink, vsock, xdp",
    "(ss -A all) — those this kernel cannot list (no sock_diag handler, e.g. sctp) are left out, with a note on",
    "stderr under -a where -A or -f named them, or with --verbose. With -K: tcp and udp, as kill. -A and -f combine with the other flags as in ss: -A",
    "starts from no table, each table brings its family and each family its tables (`-4 -x`: IPv4 and unix).",
    "Raw sockets without raw_diag are read from /proc/net/raw{,6} in the namespace, as ss does (not killable).",
    "STATE: established, syn-sent, syn-recv, fin-wait-1, fin-wait-2, time-wait, close (unconnected),",
    "       close-wait, last-ack, listening, closing, or a group: all, connected, synchronized, bucket, big.",
    "FILTER: ss's filter language, e.g.  dst 10.0.0.5:53   'dport = :443 and not src 127.0.0.1'",
    "States as ss: the last of -a/-l, then the words in order: the first `state` starts from none, the first",
    "`exclude` from every state (`ls -t exclude established`: the listeners); an empty result is the default.",
    "-s prints ss -s: the namespace's /proc/net/sockstat{,6} and snmp counters, not a count of a listing",
    "(TCP's total and orphans are the kernel's, for every namespace); with a protocol flag, state words or",
    "a FILTER the listing follows, as in ss. --all-netns: one summary per namespace, each after Netns: NAME.",
    `-K refuses an empty FILTER (use 'sockdiag kill --${DESTROY_ALL}' to destroy every selected socket).`,
    `The namespace sockdiag runs in is named ${HOST_NETNS_NAME} in the Netns column and in JSON.`,
  ].join("\n"),
};

export function runLs(argv: readonly string[]): number | Promise<number> {
  const parsed = parseCommand(LS, argv);
  const { values } = parsed;
  if (values.kill && values.summary) throw new UsageError("-K and -s cannot be combined");
  const selection = selectionFromArgs(parsed, {
    tables: values.kill ? KILL_TABLES : DEFAULT_TABLES,
  });
  if (values.kill)
    return import("./kill.js").then(({ destroySelected }) =>
      destroySelected(selection, values, {
        dryRun: false,
        emptyFilter: `give a FILTER ('sockdiag kill --${DESTROY_ALL}' destroys every selected socket)`,
      }),
    );
  const format = formatFromArgs(values);
  let code = EXIT_OK;
  if (values.summary) {
    // ss -s (misc/ss.c main) lists after the counters when a table or a filter word was named.
    const listing = selection.explicitTables || parsed.positionals.length > 0 || values.filter !== undefined;
    if (listing && format !== "table")
      throw new UsageError(
        "-s with -j/--ndjson prints the counters alone",
        "drop the protocol flags, state words and FILTER, or list with ls -j apart",
      );
    code = printSummaries(selection.query, format);
    if (!listing) return code;
  }
  // ss lists what the kernel has; protocols named one by one must exist (an error says which not).
  selection.query.ignoreUnsupported = selection.query.protocols!.filter((p) => !selection.named.has(p));
  const cgroups = cgroupsFor(selection, format === "table");
  const iteration = iterateSockets(selection.query);
  if (format !== "table" && !selection.display.processes) {
    // JSON streams: a 100,000-socket listing never holds more than one chunk of lines.
    writeJson(iteration, format, writeOut, { timers: selection.display.options, reuseBuffer: true });
  } else {
    const table = {
      display: selection.display,
      header: !values["no-header"],
      netnsColumn: selection.query.netns === "all",
      cgroups,
    };
    if (selection.display.processes) {
      // Owners are found by inode: every socket must be listed before the first row is made.
      const sockets: Socket[] = iteration.toArray();
      const owners = findSocketOwners(new Set(sockets.map((s) => s.inode)), undefined, {
        threads: selection.display.threads,
      });
      writeOut(renderSockets(sockets, format, { ...table, owners }));
    } else {
      // Rows are made as the sockets stream in (no socket outlives its row) and written in batches.
      const writer = new TableWriter(table, writeOut);
      iteration.forEach((s) => {
        writer.add(s);
      });
      writeOut(writer.finish());
    }
  }
  if (cgroups && !cgroups.mounted)
    process.stderr.write(
      "sockdiag: note: no cgroup2 file system is mounted: cgroups show as unreachable:ID\n",
    );
  // Say what this kernel could not list where asked: with --verbose, or under -a where a table or
  // family flag named it (the default's gaps are the same on every run of this kernel).
  if (values.verbose || (values.all && selection.explicitTables))
    for (const protocol of iteration.unsupported)
      process.stderr.write(
        `sockdiag: note: ${protocol} not listed: this kernel has no sock_diag handler for it\n`,
      );
  reportNamespaces(iteration.failures, iteration.notes);
  return iteration.failures.length > 0 ? EXIT_FAILED : code;
}

/**
 * ls -s: ss's summary of each namespace of the selection (with --all-netns each after a line
 * "Netns: NAME"; as JSON one object, or with --all-netns an array of them).
 */
function printSummaries(selection: NamespaceSelection, format: Format): number {
  const { summaries, failures, notes } = readSummaries(selection);
  const all = selection.netns === "all";
  if (format !== "table") {
    const lines = format === "ndjson" ? summaries : [all ? summaries : summaries[0]];
    writeOut(lines.map((x) => `${JSON.stringify(x)}\n`).join(""));
  } else {
    writeOut(
      summaries.map((s) => (all ? `Netns: ${escapeText(s.netns)}\n` : "") + formatSummary(s)).join(""),
    );
  }
  reportNamespaces(failures, notes);
  return failures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: LS, run: runLs };
