/**
 * What `kill` (and `ls -K`) prints, as it happens: the sockets destroyed by each batch go to stdout
 * once the batch is answered — a table chunk, NDJSON lines, or the items of -j's one object — so a
 * long kill shows its progress, keeps no list of what it destroyed, and an interrupted one has
 * printed everything it did. The report closes the output (-j) or goes to stderr.
 */
import type { Socket } from "../../diag/socket.js";
import type { NamespacedDestroyReport, SocketOwner } from "../../sockets/index.js";
import { type OutputError, writeOut } from "../io/index.js";
import { renderTable, stringifyForOutput, type TableOptions, writeJson } from "../render/index.js";
import type { Format } from "./output.js";
import { destroyReportJson, formatDestroyReport } from "./report.js";

export class KillOutput {
  private batch: Socket[] = [];
  private started = false;
  private readonly table: TableOptions;

  constructor(
    private readonly format: Format,
    table: TableOptions,
  ) {
    this.table = table;
  }

  /** A socket destroyed (or, in a dry run, matched): printed at the next flush(). */
  add(socket: Socket): void {
    this.batch.push(socket);
  }

  /** Print what was added since the last flush. Throws OutputError when stdout fails. */
  flush(): void {
    if (this.batch.length === 0) return;
    const sockets = this.batch;
    this.batch = [];
    if (this.format === "table") {
      writeOut(renderTable(sockets, { ...this.table, header: this.table.header && !this.started }));
    } else {
      const extras = {
        owners: this.table.owners as ReadonlyMap<number, SocketOwner[]> | undefined,
        timers: this.table.display.options,
      };
      if (this.format === "ndjson") writeJson(sockets, "ndjson", writeOut, extras);
      else {
        const lines: string[] = [];
        writeJson(sockets, "ndjson", (chunk) => lines.push(Buffer.from(chunk).toString()), extras);
        const items = lines.join("").trimEnd().split("\n").join(",\n");
        writeOut(`${this.started ? ",\n" : '{"sockets":[\n'}${items}`);
      }
    }
    this.started = true;
  }

  /**
   * Print the rest and the report: -j closes its object with it, the other formats print it on
   * stderr. When stdout has failed (`broken`), only stderr gets the report.
   */
  end(report: NamespacedDestroyReport, broken?: OutputError): void {
    if (!broken) {
      this.flush();
      if (this.format === "json")
        writeOut(
          `${this.started ? "\n]," : '{"sockets":[],'}"report":${stringifyForOutput(destroyReportJson(report))}}\n`,
        );
      else if (this.format === "table" && !this.started && this.table.header)
        writeOut(renderTable([], this.table));
    }
    if (this.format !== "json" || broken) process.stderr.write(formatDestroyReport(report));
  }
}
