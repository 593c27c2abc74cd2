/** `sockdiag kill [SELECT] FILTER`: destroy the selected sockets (SOCK_DESTROY), as ss -K does. */
import type { Protocol, Socket } from "../../diag/socket.js";
import { destroySockets, findSocketOwners } from "../../sockets/index.js";
import { stringifyForOutput } from "../json.js";
import { type CommandSpec, type ParsedValues, parseCommand } from "../options.js";
import { formatFromArgs, OUTPUT_OPTIONS, renderSockets, writeOut } from "../output.js";
import {
  anyRealFailure,
  destroyReportJson,
  formatDestroyReport,
  reportNamespaceFailures,
} from "../report.js";
import { type Selection, selectionFromArgs, selectOptions } from "../select.js";
import { EXIT_FAILED, EXIT_OK, UsageError } from "../usage.js";

export const KILL: CommandSpec = {
  name: "kill",
  usage: "[SELECT] [state STATE]... FILTER",
  summary:
    "Destroy the sockets that match. Their owners see ECONNABORTED. Prints what was destroyed; the report goes to stderr (or into -j's JSON).",
  options: [
    ...selectOptions("all-states"),
    ...OUTPUT_OPTIONS,
    { name: "dry-run", help: "list what would be destroyed, destroy nothing" },
    { name: "all", help: "allow an empty filter: destroy every selected socket" },
  ],
  details: "Without -t/-u/... only TCP and UDP sockets are selected. -a is spelled --all-states here.",
};

export function runKill(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(KILL, argv);
  const selection = selectionFromArgs(values, positionals, {
    allStatesKey: "all-states",
    protocols: KILL_PROTOCOLS,
  });
  return destroySelected(selection, values, {
    dryRun: Boolean(values["dry-run"]),
    emptyFilter: values.all ? "allowed" : "give a FILTER, or --all to mean it",
  });
}

/** What kill selects without a protocol flag (also `ls -K`). */
export const KILL_PROTOCOLS: readonly Protocol[] = ["tcp", "udp"];

/**
 * Destroy the selected sockets and print them (table or JSON, report on stderr): kill, and ls -K.
 * An empty filter is refused unless `emptyFilter` is "allowed"; otherwise it is the hint shown.
 */
export function destroySelected(
  selection: Selection,
  values: ParsedValues,
  options: { dryRun: boolean; emptyFilter: "allowed" | string },
): number {
  if (selection.filter === "" && options.emptyFilter !== "allowed") {
    throw new UsageError("refusing to destroy every selected socket without a filter", options.emptyFilter);
  }
  const printed: Socket[] = [];
  const report = destroySockets({
    ...selection.query,
    all: options.emptyFilter === "allowed",
    dryRun: options.dryRun,
    onOutcome: (socket, outcome) => {
      if (outcome === "destroyed" || outcome === "matched") printed.push(socket);
    },
  });
  const format = formatFromArgs(values);
  // A destroyed socket stays open in its owner until it closes it: -p can still name the owner.
  const owners = selection.display.processes
    ? findSocketOwners(new Set(printed.map((s) => s.inode)))
    : undefined;
  if (format === "json") {
    writeOut(`${stringifyForOutput({ sockets: printed, report: destroyReportJson(report) })}\n`);
  } else {
    writeOut(
      renderSockets(printed, format, {
        display: selection.display,
        header: !values["no-header"],
        netnsColumn: selection.query.netns === "all",
        owners,
      }),
    );
    process.stderr.write(formatDestroyReport(report));
  }
  reportNamespaceFailures(report.namespaceFailures);
  return report.failed.length > 0 || anyRealFailure(report.namespaceFailures) ? EXIT_FAILED : EXIT_OK;
}
