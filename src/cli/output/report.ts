/** Human-readable reports on stderr: namespace failures and destroy outcomes. */

import { isInetSocket } from "../../diag/socket.js";
import type { NamespaceFailure, NamespaceNote } from "../../netns/index.js";
import type { DestroyReport } from "../../sockets/index.js";
import { CAP_SYS_PTRACE, hasCapability } from "../../sys/capabilities.js";
import { escapeText } from "../render/index.js";

/**
 * One line per namespace passed over (a note) — one for all the processes whose namespace could not
 * be looked at — then one per namespace that failed. process.stderr
 * is read only when there is a line to write: its first read builds the stream (node:stream and
 * its dependencies), which a listing with nothing to report should not pay at start-up.
 */
export function reportNamespaces(
  failures: readonly NamespaceFailure[],
  notes: readonly NamespaceNote<string>[] = [],
  out?: { write(line: string): unknown },
): void {
  if (failures.length === 0 && notes.length === 0) return;
  const to = out ?? process.stderr;
  const processes = notes.filter(isUnreadableProcess);
  for (const n of notes)
    if (!isUnreadableProcess(n)) to.write(`sockdiag: note: skipped (${n.skipped}): ${n.message}\n`);
  if (processes.length > 0)
    to.write(
      `sockdiag: note: skipped the network namespaces of ${processes.length} process${processes.length === 1 ? "" : "es"}: ${unreadableWhy()}\n`,
    );
  for (const f of failures) to.write(`sockdiag: ${f.error.message}\n`);
}

/**
 * Why /proc/PID/ns/net was refused (EACCES: ptrace_may_access). Without CAP_SYS_PTRACE that is the
 * reason; with it, the process is out of reach all the same (another user namespace's, or a
 * security module's rule), and advice to get the capability would be wrong.
 */
function unreadableWhy(): string {
  return hasCapability(CAP_SYS_PTRACE)
    ? "/proc/PID/ns/net was refused (EACCES) even with CAP_SYS_PTRACE: a process of another user namespace, or a security module's rule"
    : "/proc/PID/ns/net of a process this user may not inspect needs CAP_SYS_PTRACE";
}

/** A process's namespace that discovery could not look at (EACCES on /proc/PID/ns/net): one of many. */
function isUnreadableProcess(note: NamespaceNote<string>): boolean {
  return note.skipped === "unreadable" && /^\/proc\/\d+\/ns\/net$/.test(note.netns);
}

/** Namespace failures and notes as plain JSON data (an Error object would serialise as `{}`). */
export function namespacesJson(
  failures: readonly NamespaceFailure[],
  notes: readonly NamespaceNote<string>[],
): { failures: unknown[]; notes: NamespaceNote<string>[] } {
  return {
    failures: failures.map((f) => ({ netns: f.netns, error: f.error.message, code: f.error.code })),
    notes: [...notes],
  };
}

/** A destroy report as a few lines: counts, then each stop and failure. */
export function formatDestroyReport(report: DestroyReport): string {
  const counts = report.dryRun
    ? `${report.matched} matched, ${report.wouldDestroy} would be destroyed; dry run: nothing was destroyed` +
      (report.skipped > 0 ? `, ${report.skipped} not attempted` : "")
    : `${report.matched} matched, ${report.destroyed} destroyed, ${report.gone} already gone, ${report.failed.length} failed` +
      (report.skipped > 0 ? `, ${report.skipped} not attempted` : "");
  const lines = [counts];
  for (const stop of report.stops)
    lines.push(`  stopped${stop.protocol ? ` (${stop.protocol})` : ""}: ${stop.code}: ${stop.reason}`);
  const shown = report.failed.slice(0, 20);
  for (const f of shown) {
    const s = f.socket;
    const where = isInetSocket(s)
      ? `${s.protocol} ${s.src}:${s.sport} -> ${s.dst}:${s.dport}`
      : `${s.family} inode ${s.inode}`;
    // A failure that stopped the run was explained on its "stopped" line: say it once.
    const why = report.stops.some((stop) => stop.code === f.code && stop.reason === f.message)
      ? " (see stopped above)"
      : `: ${f.message}`;
    lines.push(
      `  failed: ${where}${s.netns ? ` [netns ${escapeText(s.netns.label)}]` : ""}: ${f.code}${why}`,
    );
  }
  if (report.failed.length > shown.length)
    lines.push(`  ... and ${report.failed.length - shown.length} more failures`);
  return `${lines.join("\n")}\n`;
}

/**
 * A destroy report as plain JSON data: sockets of failures in their JSON form, and namespace
 * failures with their error's message.
 */
export function destroyReportJson(
  report: DestroyReport & {
    failures?: readonly NamespaceFailure[];
    notes?: readonly NamespaceNote<string>[];
    namespaces?: unknown;
  },
): Record<string, unknown> {
  const { namespaces: _, ...rest } = report;
  const out: Record<string, unknown> = {
    ...rest,
    failed: report.failed.map((f) => ({
      socket: f.socket.toJSON(),
      errno: f.errno,
      code: f.code,
      message: f.message,
    })),
  };
  if (report.failures) Object.assign(out, namespacesJson(report.failures, report.notes ?? []));
  return out;
}
