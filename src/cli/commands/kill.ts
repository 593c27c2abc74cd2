/** `sockdiag kill [SELECT] FILTER`: destroy the selected sockets (SOCK_DESTROY), as ss -K does. */

import { setImmediate } from "node:timers/promises";
import { AbortError, EmptySelectionError } from "../../run/index.js";
import {
  destroyInSteps,
  findSocketOwners,
  hasDiagHandler,
  type NamespacedDestroyReport,
} from "../../sockets/index.js";
import {
  type CommandSpec,
  EXIT_FAILED,
  EXIT_OK,
  OutputError,
  type ParsedValues,
  parseCommand,
  UsageError,
} from "../io/index.js";
import { formatFromArgs, KillOutput, OUTPUT_OPTIONS, reportNamespaces } from "../output/index.js";
import { cgroupsFor, type Selection, selectionFromArgs, selectOptions } from "../select/index.js";
import type { Command } from "./index.js";
import { DESTROY_ALL, KILL_TABLES } from "./kill-rules.js";

export const KILL: CommandSpec = {
  name: "kill",
  usage: "[SELECT] [state STATE]... FILTER",
  summary:
    "Destroy the sockets that match. Their owners see ECONNABORTED. Prints what was destroyed as it happens; the report goes to stderr (or ends -j's JSON).",
  options: [
    ...selectOptions(),
    ...OUTPUT_OPTIONS,
    { name: "dry-run", help: "list what would be destroyed, destroy nothing" },
    {
      name: DESTROY_ALL,
      help: "no FILTER needed: destroy every socket of the selected protocols and states",
    },
  ],
  details: [
    "Without -t/-u/... only TCP and UDP sockets are selected. -a/--all means every state, as in ls.",
    `A kill without FILTER, or with one of wildcards only (dport = :*), is refused unless --${DESTROY_ALL} is given.`,
    "SIGINT/SIGTERM: no further request is sent, the batch in flight is finished, the report so far",
    "is printed, and the exit status is 130/143.",
  ].join("\n"),
};

export async function runKill(argv: readonly string[]): Promise<number> {
  const parsed = parseCommand(KILL, argv);
  const { values } = parsed;
  const selection = selectionFromArgs(parsed, { tables: KILL_TABLES });
  return destroySelected(selection, values, {
    dryRun: Boolean(values["dry-run"]),
    emptyFilter: values[DESTROY_ALL] ? "allowed" : `give a FILTER, or --${DESTROY_ALL} to mean it`,
  });
}

/** The exit status after a signal, as shells report it: 128 + the signal's number. */
const SIGNAL_EXITS = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * Destroy the selected sockets, printing each batch's as it is answered (table or JSON, report on
 * stderr): kill, and ls -K. An empty filter is refused unless `emptyFilter` is "allowed";
 * otherwise it is the hint shown. The run lets the event loop turn between batches: SIGINT or
 * SIGTERM stops it (nothing more is sent, the batch in flight is finished), and so does a stdout
 * that fails; either way the report of what was done is printed.
 */
export async function destroySelected(
  selection: Selection,
  values: ParsedValues,
  options: { dryRun: boolean; emptyFilter: "allowed" | string },
): Promise<number> {
  refuseRawWithoutDiag(selection);
  const format = formatFromArgs(values);
  // Owners are found before destroying, while every socket is still open in its owner.
  const owners = selection.display.processes
    ? findSocketOwners(undefined, undefined, { threads: selection.display.threads })
    : undefined;
  const output = new KillOutput(format, {
    display: selection.display,
    header: !values["no-header"],
    netnsColumn: selection.query.netns === "all",
    owners,
    cgroups: cgroupsFor(selection, format === "table"),
  });
  const stop = new AbortController();
  let signal: keyof typeof SIGNAL_EXITS | undefined;
  const onSignal = (name: keyof typeof SIGNAL_EXITS) => {
    signal ??= name;
    stop.abort(new Error(`interrupted by ${name}`));
  };
  const onInt = () => onSignal("SIGINT");
  const onTerm = () => onSignal("SIGTERM");
  process.on("SIGINT", onInt);
  process.on("SIGTERM", onTerm);
  let broken: OutputError | undefined;
  let report: NamespacedDestroyReport;
  try {
    const run = destroyInSteps({
      ...selection.query,
      all: options.emptyFilter === "allowed",
      dryRun: options.dryRun,
      signal: stop.signal,
      onOutcome: (socket, outcome) => {
        if (outcome === "destroyed" || outcome === "wouldDestroy") output.add(socket);
      },
    });
    report = await drive(run, () => {
      if (broken) return;
      try {
        output.flush();
      } catch (err) {
        if (!(err instanceof OutputError)) throw err;
        // Nobody reads what was destroyed any more: stop destroying, as ss does when its pipe closes.
        broken = err;
        stop.abort(err);
      }
    });
  } catch (err) {
    // A filter of wildcards only (`dport = :*`) selects as much as none, and is refused alike.
    if (!(err instanceof EmptySelectionError)) throw err;
    const what =
      selection.filter === ""
        ? "without a filter"
        : `with a filter that matches everything ("${selection.filter}")`;
    throw new UsageError(`refusing to destroy every selected socket ${what}`, options.emptyFilter);
  } finally {
    process.off("SIGINT", onInt);
    process.off("SIGTERM", onTerm);
  }
  output.end(report, broken);
  if (broken && !broken.readerGone) process.stderr.write(`sockdiag: ${broken.message}\n`);
  reportNamespaces(report.failures, report.notes);
  if (signal) return SIGNAL_EXITS[signal];
  if (broken && !broken.readerGone) return EXIT_FAILED;
  return report.failed.length > 0 || report.failures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

/** CannotDestroyError: the selection holds sockets this kernel cannot destroy; nothing was sent. */
class CannotDestroyError extends Error {
  override readonly name = "CannotDestroyError";
}

/**
 * Without raw_diag, `ls -w` lists raw sockets from /proc/net/raw, but SOCK_DESTROY reaches a raw
 * socket only through raw_diag: refused before anything else of the selection is destroyed.
 */
function refuseRawWithoutDiag(selection: Selection): void {
  if (!selection.query.protocols?.includes("raw") || hasDiagHandler("raw")) return;
  throw new CannotDestroyError(
    "raw sockets cannot be destroyed here: this kernel has no raw_diag sock_diag handler, the only way " +
      "SOCK_DESTROY reaches them (ls -w lists them from /proc/net/raw); nothing was destroyed",
  );
}

/**
 * Run a destroy to its end, one step at a time, with `between` and a turn of the event loop after
 * each (where signal handlers run). A stop through the signal ends it with AbortError, whose report
 * is the result.
 */
async function drive(
  run: Generator<void, NamespacedDestroyReport, void>,
  between: () => void,
): Promise<NamespacedDestroyReport> {
  try {
    for (;;) {
      const step = run.next();
      between();
      if (step.done) return step.value;
      await setImmediate();
    }
  } catch (err) {
    if (err instanceof AbortError && err.report) {
      between();
      return err.report as NamespacedDestroyReport;
    }
    throw err;
  }
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: KILL, run: runKill };
