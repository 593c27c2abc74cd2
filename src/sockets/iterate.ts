/**
 * iterateSockets / listSockets: the read half of the sockets library.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { Socket } from "../diag/socket.js";
import { NetlinkSocket } from "../netlink/index.js";
import { Dumper } from "./dump.js";
import { type SocketQuery, planQuery } from "./query.js";

/**
 * Stream the sockets that match `query`, one dump at a time: memory stays flat whatever the number
 * of sockets. Checks the query before sending anything (QueryError). Throws
 * UnsupportedProtocolError for a protocol this kernel cannot list, NetlinkError / SysError for
 * other kernel failures. Breaking out of the loop releases the netlink socket.
 */
export function* iterateSockets(query: SocketQuery = {}): Generator<Socket> {
  const plan = planQuery(query);
  using conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
  const dumper = new Dumper(conn);
  const options = { attributes: plan.attributes, netns: undefined };
  for (const dump of plan.inet) yield* dumper.inet(dump, options);
  if (plan.unix) yield* dumper.unix(plan.unix.states, plan.unix.show, undefined);
}

/** Collect iterateSockets(query) into an array. Same errors. */
export function listSockets(query: SocketQuery = {}): Socket[] {
  return [...iterateSockets(query)];
}
