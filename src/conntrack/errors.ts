/** The errors the conntrack library throws for bad input. */
import { sockdiagError } from "../sys/errors.js";

/** ConntrackQueryError: a conntrack query that is wrong (bad address, port, protocol). Nothing was sent. */
export class ConntrackQueryError extends sockdiagError(
  "ConntrackQueryError",
  "ERR_SOCKDIAG_CONNTRACK_QUERY",
) {
  /** The query field at fault, e.g. "reply.src". */
  declare readonly field: string;
  /** The offending value as given. */
  declare readonly value: string;
  constructor(field: string, value: unknown, detail: string) {
    super(`invalid conntrack ${field} "${String(value)}": ${detail}`, { field, value: String(value) });
  }
}

/**
 * EmptySelectionError: deleteConntrack was asked to delete with a selection that names no address,
 * port, zone or mark (a mark under a zero mask names none) — every entry of the protocol would go.
 * Refused unless `all: true` says so.
 */
export class EmptySelectionError extends sockdiagError(
  "EmptySelectionError",
  "ERR_SOCKDIAG_CONNTRACK_EMPTY_SELECTION",
) {
  constructor() {
    super(
      "refusing to delete conntrack entries with an empty selection (no address, port, zone or mark; a zero mark mask selects every entry): pass all: true to mean every entry",
    );
  }
}
