/** `sockdiag netns ls`: the network namespaces on this machine, pinned or in use by a process. */

import { current, discoverNetns, HOST_NETNS_NAME } from "../../netns/index.js";
import { iterateSockets, PROTOCOL_NAMES } from "../../sockets/index.js";
import { escapeText } from "../render/index.js";

const COUNTED = PROTOCOL_NAMES.filter((p) => p !== "netlink");

import {
  type CommandSpec,
  EXIT_FAILED,
  EXIT_OK,
  EXIT_USAGE,
  parseCommand,
  renderHelp,
  UsageError,
  writeOut,
} from "../io/index.js";
import { reportNamespaces } from "../output/index.js";
import { NETNS_DIR_OPTION } from "../select/index.js";
import type { Command } from "./index.js";

export const NETNS: CommandSpec = {
  name: "netns",
  usage: "ls|list [--netns-dir DIR]... [-j]",
  summary: "List network namespaces: pinned name, path, inode, the processes in each, and its socket count.",
  options: [
    NETNS_DIR_OPTION,
    { name: "json", short: "j", help: "print one JSON array" },
    { name: "no-header", short: "H", help: "no table header" },
  ],
  details: `The namespace sockdiag runs in is named ${HOST_NETNS_NAME} (whether pinned or not); "-" (null in JSON) marks a namespace no pin names.`,
};

interface Row {
  name: string | null;
  path: string;
  inode: number;
  pids: number[];
  sockets: number | null;
  error?: string;
}

export function runNetns(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(NETNS, argv);
  if (positionals.length === 0) {
    process.stderr.write(renderHelp(NETNS));
    return EXIT_USAGE;
  }
  if (positionals.length !== 1 || (positionals[0] !== "ls" && positionals[0] !== "list")) {
    throw new UsageError(
      `unknown netns subcommand "${positionals.join(" ")}"`,
      "usage: sockdiag netns ls|list [-j]",
    );
  }
  const dirs = values["netns-dir"] as string[] | undefined;
  const found = discoverNetns(dirs ? { netnsDirs: dirs } : {});
  const rows: Row[] = [];
  using self = current();
  for (const ns of found) {
    const row: Row = {
      name: ns.netns.equals(self) ? HOST_NETNS_NAME : (ns.name ?? null),
      path: ns.path,
      inode: ns.netns.ino,
      pids: ns.pids,
      sockets: null,
    };
    try {
      let count = 0;
      // Every protocol this kernel can list, in every state; not netlink: every namespace holds the
      // kernel's own netlink sockets (and this count's).
      for (const _ of iterateSockets({ netns: ns.netns, protocols: COUNTED, ignoreUnsupported: true }))
        count++;
      row.sockets = count;
    } catch (err) {
      row.error = (err as Error).message;
    }
    rows.push(row);
  }
  if (values.json) {
    writeOut(`${JSON.stringify(rows, null, 2)}\n`);
  } else {
    const table = rows.map((r) => [
      r.name === null ? "-" : escapeText(r.name),
      escapeText(r.path),
      String(r.inode),
      r.pids.slice(0, 8).join(",") + (r.pids.length > 8 ? ",..." : ""),
      r.sockets === null ? `error: ${r.error}` : String(r.sockets),
    ]);
    if (!values["no-header"]) table.unshift(["NAME", "PATH", "INODE", "PIDS", "SOCKETS"]);
    const widths = [0, 1, 2, 3].map((c) => Math.max(...table.map((r) => r[c]!.length)));
    writeOut(
      table.map((r) => r.map((cell, c) => (c < 4 ? cell.padEnd(widths[c]!) : cell)).join("  ")).join("\n") +
        "\n",
    );
  }
  const failures = found.failures;
  const notes = found.notes;
  reportNamespaces(failures, notes);
  return rows.some((r) => r.error) || failures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: NETNS, run: runNetns };
