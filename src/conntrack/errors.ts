/** The errors of the conntrack library: bad input, and a namespace without conntrack. */
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
 * ConntrackUnavailableError: this namespace or kernel has no conntrack to ask (nfnetlink or
 * nf_conntrack_netlink missing). Reported as a note: no table means no entry to delete.
 */
export class ConntrackUnavailableError extends sockdiagError(
  "ConntrackUnavailableError",
  "ERR_SOCKDIAG_CONNTRACK_UNAVAILABLE",
) {
  constructor(netns: string, cause: Error) {
    super(`${netns}: no conntrack here (${cause.message})`, undefined, cause);
  }
}
