/** Human-readable reports on stderr: namespace failures and destroy outcomes. */
import type { DestroyReport, NamespaceFailure } from "../sockets/index.js";

/** One line per namespace that could not be visited. */
export function reportNamespaceFailures(failures: readonly NamespaceFailure[], out = process.stderr): void {
  for (const f of failures)
    out.write(`sockdiag: ${f.note ? `note: skipped (${f.note}): ` : ""}${f.error.message}\n`);
}

/** Whether any namespace failure is a real failure (not just a namespace we may not look at). */
export function anyRealFailure(failures: readonly NamespaceFailure[]): boolean {
  return failures.some((f) => !f.note);
}

/** A destroy report as a few lines: counts, then each stop and failure. */
export function formatDestroyReport(report: DestroyReport): string {
  const counts = report.dryRun
    ? `${report.matched} matched`
    : `${report.matched} matched, ${report.destroyed} destroyed, ${report.gone} already gone, ${report.failed.length} failed` +
      (report.skipped > 0 ? `, ${report.skipped} not attempted` : "");
  const lines = [counts];
  for (const stop of report.stops)
    lines.push(`  stopped${stop.protocol ? ` (${stop.protocol})` : ""}: ${stop.code}: ${stop.reason}`);
  const shown = report.failed.slice(0, 20);
  for (const f of shown) {
    const s = f.socket;
    const where =
      s.family === "unix"
        ? `unix inode ${s.inode}`
        : `${s.protocol} ${s.src}:${s.sport} -> ${s.dst}:${s.dport}`;
    // A failure that stopped the run was explained on its "stopped" line: say it once.
    const why = report.stops.some((stop) => stop.code === f.code && stop.reason === f.message)
      ? " (see stopped above)"
      : `: ${f.message}`;
    lines.push(`  failed: ${where}${s.netns ? ` [netns ${s.netns.label}]` : ""}: ${f.code}${why}`);
  }
  if (report.failed.length > shown.length)
    lines.push(`  ... and ${report.failed.length - shown.length} more failures`);
  return `${lines.join("\n")}\n`;
}

/**
 * A destroy report as plain JSON data: sockets of failures in their JSON form, and namespace
 * failures with their error's message (an Error object would serialise as `{}`).
 */
export function destroyReportJson(
  report: DestroyReport & { namespaceFailures?: readonly NamespaceFailure[] },
): Record<string, unknown> {
  const out: Record<string, unknown> = {
    ...report,
    failed: report.failed.map((f) => ({
      socket: f.socket.toJSON(),
      errno: f.errno,
      code: f.code,
      message: f.message,
    })),
  };
  if (report.namespaceFailures) {
    out.namespaceFailures = report.namespaceFailures.map((f) => ({
      netns: f.netns,
      error: f.error.message,
      ...(f.note ? { note: f.note } : {}),
    }));
  }
  return out;
}
