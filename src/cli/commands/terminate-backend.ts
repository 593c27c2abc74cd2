/**
 * `sockdiag terminate-backend IP:PORT`: destroy every socket connected to a load-balancer backend
 * that went away, in the host and in every pinned namespace, and report per namespace.
 */
import {
  type BackendProtocol,
  BackendTerminator,
  type NamespaceResult,
  parseBackend,
  type TerminationReport,
} from "../../terminator/index.js";
import { type CommandSpec, parseCommand } from "../options.js";
import { writeOut } from "../output.js";
import { destroyReportJson } from "../report.js";
import { NETNS_DIR_OPTION } from "../select.js";
import { EXIT_FAILED, EXIT_OK, UsageError } from "../usage.js";

export const TERMINATE_BACKEND: CommandSpec = {
  name: "terminate-backend",
  usage: "IP:PORT|[IPv6]:PORT [--protocol udp|tcp|any] [--host-only] [--netns-dir DIR]... [--dry-run] [-j]",
  summary:
    "Destroy every connected socket whose destination is the backend IP:PORT, in the host and every pinned network namespace. Their owners see ECONNABORTED and can reconnect to a live backend.",
  options: [
    { name: "protocol", value: "udp|tcp|any", help: "which sockets (default udp)" },
    { name: "host-only", help: "only the host namespace" },
    NETNS_DIR_OPTION,
    { name: "dry-run", help: "count what would be destroyed, destroy nothing" },
    { name: "json", short: "j", help: "print the report as JSON" },
  ],
  details: [
    "An IPv4 backend also matches IPv6 sockets connected to its v4-mapped address (::ffff:a.b.c.d).",
    "Unconnected sockets are never touched. Needs CAP_NET_ADMIN (destroy) and CAP_SYS_ADMIN (enter namespaces).",
    "Exit status: 0 all destroyed, 1 some destroy or namespace failed, 2 bad input.",
  ].join("\n"),
};

/** Show a progress line on stderr past this many namespaces, when stderr is a terminal. */
const PROGRESS_FROM = 20;

export function runTerminateBackend(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(TERMINATE_BACKEND, argv);
  if (positionals.length !== 1) {
    throw new UsageError(
      positionals.length === 0
        ? "terminate-backend needs the backend IP:PORT"
        : `one backend at a time, got: ${positionals.join(" ")}`,
    );
  }
  const backend = parseBackend(positionals[0]!);
  const protocol = (values.protocol as BackendProtocol | undefined) ?? "udp";
  const progress = process.stderr.isTTY;
  const terminator = new BackendTerminator({
    hostOnly: Boolean(values["host-only"]),
    dryRun: Boolean(values["dry-run"]),
    ...(values["netns-dir"] ? { netnsDirs: values["netns-dir"] as string[] } : {}),
    onNamespace: (_result, index) => {
      if (progress && index + 1 >= PROGRESS_FROM) process.stderr.write(`\r${index + 1} namespaces done`);
    },
  });
  const report = terminator.terminate({ address: backend.address, port: backend.port, protocol });
  if (progress && report.namespaces.length >= PROGRESS_FROM) process.stderr.write("\n");
  writeOut(values.json ? `${JSON.stringify(reportJson(report), null, 2)}\n` : formatReport(report));
  return report.ok ? EXIT_OK : EXIT_FAILED;
}

function reportJson(report: TerminationReport): Record<string, unknown> {
  return {
    ...report,
    namespaces: report.namespaces.map((n) => ({ ...n, report: n.report && destroyReportJson(n.report) })),
  };
}

function formatReport(report: TerminationReport): string {
  const { backend, total } = report;
  const dry = report.namespaces.some((n) => n.report?.dryRun);
  const lines = [
    `backend ${backend.address.includes(":") ? `[${backend.address}]` : backend.address}:${backend.port} (${backend.protocol})${dry ? " — dry run" : ""}`,
  ];
  const quiet = report.namespaces.filter((n) => isQuiet(n));
  for (const n of report.namespaces) if (!isQuiet(n)) lines.push(`  ${n.netns.padEnd(24)} ${describe(n)}`);
  if (quiet.length > 0)
    lines.push(`  (${quiet.length} namespace${quiet.length === 1 ? "" : "s"} without matching sockets)`);
  if (report.unsupported) lines.push(`  stopped: ${report.unsupported}`);
  for (const e of report.sourceErrors) lines.push(`  namespace source error: ${e.message}`);
  lines.push(
    `total: ${total.matched} matched, ${dry ? `${total.matched} would be destroyed` : `${total.destroyed} destroyed`}, ${total.gone} already gone, ${total.failed} failed${total.skipped ? `, ${total.skipped} not attempted` : ""} in ${report.namespaces.length} namespace${report.namespaces.length === 1 ? "" : "s"}`,
  );
  return `${lines.join("\n")}\n`;
}

function isQuiet(n: NamespaceResult): boolean {
  return !n.error && !n.skipped && n.report !== undefined && n.report.matched === 0;
}

function describe(n: NamespaceResult): string {
  if (n.error) return `error: ${n.error.message}`;
  if (n.skipped || !n.report) return "skipped (the kernel cannot destroy sockets)";
  const r = n.report;
  const parts = [`matched ${r.matched}`];
  if (!r.dryRun) parts.push(`destroyed ${r.destroyed}`, `gone ${r.gone}`, `failed ${r.failed.length}`);
  const first = r.failed[0];
  if (first) parts.push(`(${first.code}: ${first.message})`);
  return parts.join("  ");
}
