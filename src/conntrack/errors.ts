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
