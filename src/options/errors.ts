/** The error of a caller's input that is wrong before anything is sent. */
import { sockdiagError } from "../sys/errors.js";

/**
 * QueryError: a call's input is wrong (an unknown option or protocol, a value of the wrong kind, a
 * selection that would match everything). It names the field at fault. Nothing was sent.
 */
export class QueryError extends sockdiagError<string, string>("QueryError", "ERR_SOCKDIAG_QUERY") {
  /** The query field at fault, e.g. "states". */
  declare readonly field: string;
  /** The offending value as given. */
  declare readonly value: string;
  constructor(field: string, value: string, detail: string) {
    super(`invalid ${field} "${value}": ${detail}`, { field, value });
  }
}
