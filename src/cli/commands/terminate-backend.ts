/**
 * `sockdiag terminate-backend IP:PORT...`: destroy every socket connected to load-balancer backends
 * that went away, in the host and in every other namespace (or the namespaces chosen), in one pass
 * for all the backends, and report per namespace and per backend.
 */

import type { ConntrackEntry } from "../../ctnl/index.js";
import { current, DEFAULT_NETNS_DIRS, fromLabel } from "../../netns/index.js";
import type { Tally } from "../../run/index.js";
import { isTerminal } from "../../sys/index.js";
import {
  type BackendProtocol,
  type BackendResult,
  BackendTerminator,
  type BatchNamespaceResult,
  type BatchTerminationReport,
  type NamespaceResult,
  type OnePassMode,
  parseBackend,
  type TerminatorConfig,
} from "../../terminator/index.js";
import { type CommandSpec, EXIT_FAILED, EXIT_OK, parseCommand, UsageError, writeOut } from "../io/index.js";
import { destroyReportJson } from "../output/index.js";
import { escapeText, stringifyForOutput } from "../render/index.js";
import { NETNS_DIR_OPTION, NETNS_OPTIONS, NO_DISCOVER_OPTION, namespaceFromArgs } from "../select/index.js";
import type { Command } from "./index.js";
import { formatPlan, PlanCollector, type PlanGroup } from "./terminate-plan.js";

export const TERMINATE_BACKEND: CommandSpec = {
  name: "terminate-backend",
  usage:
    "IP:PORT|[IPv6]:PORT... [--protocol udp|tcp|any] [--host-only | -N NAME | --netns PATH | --pid PID] [--netns-dir DIR]... [--no-discover] [--no-conntrack] [--one-pass auto|on|off] [--dry-run] [-j]",
  summary:
    "Destroy every connected socket whose destination is one of the backends IP:PORT, in the host and every other network namespace, pinned or in use by a process. Their owners see ECONNABORTED and can reconnect to a live backend.",
  options: [
    { name: "protocol", value: "udp|tcp|any", help: "which sockets (default udp)" },
    { name: "host-only", help: "only the host namespace" },
    ...NETNS_OPTIONS.map((o) => ({
      ...o,
      help: `only ${o.help.replace(/^in /, "").replace(/, as ss -N$/, "")}`,
    })),
    {
      name: "all-netns",
      help: "the default: the host, every pinned namespace and every one found through /proc",
    },
    NETNS_DIR_OPTION,
    NO_DISCOVER_OPTION,
    {
      name: "no-conntrack",
      help: "leave conntrack entries alone (default: delete the UDP ones DNATed to the backends)",
    },
    {
      name: "one-pass",
      value: "auto|on|off",
      help: "find the sockets in one BPF pass over every task's files and enter only the namespaces that need it: auto (default) where it can run and pays, on (else fail, saying why), off (walk every namespace)",
    },
    {
      name: "dry-run",
      help: "destroy nothing: count what would be destroyed, and show it by owner (pod, container, processes)",
    },
    { name: "json", short: "j", help: "print the report as JSON" },
  ],
  details: [
    `Without a namespace option every namespace is visited: the host, those pinned in ${DEFAULT_NETNS_DIRS.join(", ")} (each where it exists; --netns-dir names others instead), and every one a process is in, found through /proc/PID/ns/net (unless --no-discover). --host-only, -N, --netns and --pid visit exactly the namespace named.`,
    "Several backends are terminated in one pass: each namespace is entered once and listed once per protocol and family.",
    "An IPv4 backend also matches IPv6 sockets connected to its v4-mapped address (::ffff:a.b.c.d).",
    "For UDP backends, the conntrack entries whose reply source is the backend (flows DNATed to it) are deleted too, in every namespace visited: clients of a virtual IP then reach a live backend with their next datagram.",
    "With --dry-run the sockets it would destroy are shown by owner, in the table and in -j's byOwner: for each namespace, the pod UID and container of the processes holding them (from their cgroups, as the kubelet lays them out: cgroup v1 or v2, the cgroupfs or systemd driver), the processes, and the sockets; then sockets held by processes outside any pod; then sockets no process was found holding (said so). A socket goes by the processes holding it, never by its namespace: a host-network pod shares the host's. Conntrack entries have no owner: they are counted per namespace (wouldDelete).",
    "--one-pass: one pass over every task's open files (a BPF iterator; needs CAP_BPF and CAP_PERFMON, or CAP_SYS_ADMIN, the initial PID namespace and the kernel's BTF) finds the UDP sockets connected to the backends in every namespace at once; a namespace where it found some is entered and exactly those destroyed, one whose UDP counters (read without entering) count more sockets than it found there is walked as without it (a socket in flight in SCM_RIGHTS, or connected elsewhere), the others are not entered (said per namespace). auto, the default, takes it for UDP backends over every namespace when it can run and the namespaces share the host's UDP table (net.ipv4.udp_child_hash_entries 0); why it did not is a note. --one-pass off walks every namespace, as before the pass. `sockdiag doctor` says which path terminations take here.",
    "Unconnected sockets are never touched. Needs CAP_NET_ADMIN (destroy) and CAP_SYS_ADMIN (enter namespaces).",
    'The namespace sockdiag runs in is called "(host)" in every report.',
    "Exit status: 0 all destroyed, 1 some destroy or namespace failed, 2 bad input.",
  ].join("\n"),
};

/** Show a progress line on stderr past this many namespaces, when stderr is a terminal. */
const PROGRESS_FROM = 20;

export function runTerminateBackend(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(TERMINATE_BACKEND, argv);
  if (positionals.length === 0) throw new UsageError("terminate-backend needs a backend IP:PORT");
  const backends = positionals.map(parseBackend);
  const protocol = (values.protocol as BackendProtocol | undefined) ?? "udp";
  const chosen = namespaceFromArgs(values, true);
  const progress = isTerminal(2);
  const dryRun = Boolean(values["dry-run"]);
  const plan = dryRun ? new PlanCollector() : undefined;
  // One namespace named on the command line is opened first: a bad name is a usage error (exit 2).
  using one = values["host-only"]
    ? current()
    : typeof chosen.netns === "string" && chosen.netns !== "all"
      ? fromLabel(chosen.netns)
      : undefined;
  const onePass = (values["one-pass"] as OnePassMode | undefined) ?? "auto";
  if (!["auto", "on", "off"].includes(onePass))
    throw new UsageError(`--one-pass takes auto, on or off, not "${onePass}"`);
  const config: TerminatorConfig = {
    protocol,
    onePass,
    dryRun,
    conntrack: !values["no-conntrack"],
    ...chosen,
    netns: one ?? "all",
    ...(plan ? { predicate: plan.approve } : {}),
    onNamespace: (result, index, total) => {
      plan?.endNamespace(result.netns);
      if (progress && index + 1 >= PROGRESS_FROM)
        process.stderr.write(`\rnamespace ${index + 1}${total === undefined ? "" : ` of ${total}`}`);
    },
  };
  const report = new BackendTerminator(config).terminateMany(
    backends.map((b) => ({ address: b.address, port: b.port })),
  );
  if (progress && report.namespaces.length >= PROGRESS_FROM) process.stderr.write("\n");
  const groups = plan?.groups();
  writeOut(
    values.json ? `${stringifyForOutput(reportJson(report, groups), 2)}\n` : formatReport(report, groups),
  );
  return report.ok ? EXIT_OK : EXIT_FAILED;
}

function reportJson(report: BatchTerminationReport, plan: PlanGroup[] | undefined): Record<string, unknown> {
  return {
    ...report,
    namespaces: report.namespaces.map((n) => ({ ...n, report: n.report && destroyReportJson(n.report) })),
    ...(plan ? { byOwner: plan } : {}),
  };
}

function backendText(b: BackendResult["backend"]): string {
  return `${b.address.includes(":") ? `[${b.address}]` : b.address}:${b.port} (${b.protocol})`;
}

function formatReport(report: BatchTerminationReport, plan: PlanGroup[] | undefined): string {
  const { backends, total } = report;
  const dry = report.namespaces.some((n) => n.report?.dryRun);
  const lines = [
    `${backends.length === 1 ? "backend" : "backends"} ${backends.map((b) => backendText(b.backend)).join(", ")}${dry ? " — dry run" : ""}`,
  ];
  const quiet = report.namespaces.filter((n) => isQuiet(n));
  for (const n of report.namespaces)
    if (!isQuiet(n)) lines.push(`  ${escapeText(n.netns).padEnd(24)} ${describe(n)}`);
  if (quiet.length > 0)
    lines.push(`  (${quiet.length} namespace${quiet.length === 1 ? "" : "s"} without matching sockets)`);
  if (report.unsupported) lines.push(`  stopped: ${report.unsupported}`);
  if (report.onePass?.used) lines.push(`  ${report.onePass.message}`);
  for (const n of report.notes) lines.push(`  note: skipped (${n.skipped}): ${n.message}`);
  for (const f of report.failures) lines.push(`  namespace source error: ${f.error.message}`);
  if (backends.length > 1)
    for (const b of backends)
      lines.push(
        `  ${backendText(b.backend).padEnd(24)} ${counts(b.total, dry)}${b.conntrack ? `  conntrack ${conntrackCounts(b.conntrack, dry)}` : ""}`,
      );
  if (plan) lines.push(...formatPlan(plan));
  if (report.conntrack) lines.push(`conntrack: ${conntrackCounts(report.conntrack, dry)}`);
  lines.push(
    `total: ${total.matched} matched, ${dry ? `${total.wouldDestroy} would be destroyed` : `${total.destroyed} destroyed`}, ${total.gone} already gone, ${total.failed.length} failed${total.skipped ? `, ${total.skipped} not attempted` : ""} in ${report.namespaces.length} namespace${report.namespaces.length === 1 ? "" : "s"}`,
  );
  if (dry)
    lines.push(`dry run: nothing was destroyed${report.conntrack ? " and no conntrack entry deleted" : ""}`);
  return `${lines.join("\n")}\n`;
}

function conntrackCounts(t: Tally<ConntrackEntry>, dry: boolean): string {
  return dry
    ? `${t.matched} matched, ${t.wouldDelete} would be deleted`
    : `${t.matched} matched, ${t.deleted} deleted, ${t.gone} already gone, ${t.failed.length} failed${t.skipped ? `, ${t.skipped} not attempted` : ""}`;
}

function counts(t: Tally, dry: boolean): string {
  return dry
    ? `matched ${t.matched}  would destroy ${t.wouldDestroy}`
    : `matched ${t.matched}  destroyed ${t.destroyed}  gone ${t.gone}  failed ${t.failed.length}`;
}

function isQuiet(n: BatchNamespaceResult): boolean {
  return (
    !n.error &&
    !n.skipped &&
    n.report !== undefined &&
    n.report.matched === 0 &&
    !n.conntrackError &&
    !n.conntrackNote &&
    (n.conntrack?.matched ?? 0) === 0
  );
}

function describe(n: NamespaceResult): string {
  const sockets = describeSockets(n);
  if (n.conntrackError) return `${sockets}; conntrack error: ${n.conntrackError.message}`;
  if (n.conntrackNote) return `${sockets}; conntrack: ${n.conntrackNote}`;
  if (n.conntrack && n.conntrack.matched > 0)
    return `${sockets}; conntrack ${conntrackCounts(n.conntrack, Boolean(n.report?.dryRun))}`;
  return sockets;
}

function describeSockets(n: NamespaceResult): string {
  if (n.error) return `error: ${n.error.message}`;
  if (n.skipped || !n.report) return "skipped (the kernel cannot destroy sockets)";
  const r = n.report;
  const parts = [`matched ${r.matched}`];
  if (r.dryRun) parts.push(`would destroy ${r.wouldDestroy}`);
  else parts.push(`destroyed ${r.destroyed}`, `gone ${r.gone}`, `failed ${r.failed.length}`);
  const first = r.failed[0];
  if (first) parts.push(`(${first.code}: ${first.message})`);
  return parts.join("  ");
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: TERMINATE_BACKEND, run: runTerminateBackend };
