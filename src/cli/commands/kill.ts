/** `sockdiag kill [SELECT] FILTER`: destroy the selected sockets (SOCK_DESTROY), as ss -K does. */
import type { Socket } from "../../diag/socket.js";
import { destroySockets, findSocketOwners } from "../../sockets/index.js";
import { type CommandSpec, parseCommand } from "../options.js";
import { formatFromArgs, OUTPUT_OPTIONS, renderSockets, writeOut } from "../output.js";
import {
  anyRealFailure,
  destroyReportJson,
  formatDestroyReport,
  reportNamespaceFailures,
} from "../report.js";
import { selectionFromArgs, selectOptions } from "../select.js";
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
    protocols: ["tcp", "udp"],
  });
  if (selection.filter === "" && !values.all) {
    throw new UsageError(
      "refusing to destroy every selected socket without a filter",
      "give a FILTER, or --all to mean it",
    );
  }
  const dryRun = Boolean(values["dry-run"]);
  const printed: Socket[] = [];
  const report = destroySockets({
    ...selection.query,
    all: Boolean(values.all),
    dryRun,
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
    writeOut(`${JSON.stringify({ sockets: printed, report: destroyReportJson(report) })}\n`);
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
