/**
 * A socket that travelled as plain data (structuredClone, postMessage, `{...s}`) has its fields but
 * not its class: rebuild an InetSocket from the fields that name it, so that a destroy names it by
 * exactly the id it was listed with.
 */

import { InetSocket, idFault, isListedSocket, type Socket } from "../diag/socket.js";
import { QueryError } from "../options/index.js";

/** The fields of an inet socket that name it: what a plain copy ({...s}, a clone) must keep. */
export type InetSocketFields = Pick<
  InetSocket,
  "family" | "protocol" | "src" | "sport" | "dst" | "dport" | "ifindex" | "cookie" | "netns"
> & { rawProtocol?: number | undefined };

const INET = new Set(["tcp", "udp", "udplite", "raw", "mptcp", "sctp"]);

/**
 * `socket` itself when it is a listed socket, else an InetSocket built from its fields. Throws
 * QueryError naming a missing field, or a field of its id that no socket of its family has (see
 * idFault: an address of the other family, a port past 65535, a cookie the kernel never gives).
 */
export function revive(socket: Socket | InetSocketFields): Socket {
  // A listed socket of another family passes whole: the Destroyer says why it cannot destroy it.
  if (isListedSocket(socket) && !(socket instanceof InetSocket)) return socket;
  const f = socket as Partial<InetSocketFields>;
  if (
    (f.family !== "inet" && f.family !== "inet6") ||
    !INET.has(f.protocol as string) ||
    typeof f.src !== "string" ||
    typeof f.dst !== "string"
  )
    throw new QueryError(
      "socket",
      "(an object)",
      "expected a socket as listSockets or iterateSockets returned it, or a copy with its fields",
    );
  const s = socket as InetSocketFields;
  const fault = idFault(s);
  if (fault) throw new QueryError(fault.field, fault.text, fault.reason);
  if (socket instanceof InetSocket) return socket;
  return InetSocket.build({
    family: s.family,
    protocol: s.protocol,
    src: s.src,
    sport: s.sport,
    dst: s.dst,
    dport: s.dport,
    ifindex: s.ifindex,
    cookie: s.cookie,
    netns: s.netns,
    rawProtocol: s.rawProtocol,
  });
}
