/**
 * A socket that travelled as plain data (structuredClone, postMessage, `{...s}`) has its fields but
 * not the message bytes an InetSocket keeps: rebuild one from the fields, so that a destroy names it
 * by exactly the id it was listed with.
 */

import { parseIPv6 } from "../diag/address.js";
import { InetSocket, type Socket, UnixSocket } from "../diag/socket.js";
import { parseIPv4 } from "../filter/prefix.js";
import { QueryError } from "./errors.js";

/** The fields of an inet socket that name it: what a plain copy ({...s}, a clone) must keep. */
export type InetSocketFields = Pick<
  InetSocket,
  "family" | "protocol" | "src" | "sport" | "dst" | "dport" | "ifindex" | "cookie" | "netns"
> & { rawProtocol?: number | undefined };

const INET = new Set(["tcp", "udp", "udplite", "raw", "mptcp", "sctp"]);

/** `socket` itself when it is a listed socket, else an InetSocket built from its fields. */
export function revive(socket: Socket | InetSocketFields): Socket {
  if (socket instanceof InetSocket || socket instanceof UnixSocket) return socket;
  const f = socket as Partial<InetSocketFields>;
  if (
    (f.family !== "inet" && f.family !== "inet6") ||
    !INET.has(f.protocol as string) ||
    typeof f.src !== "string" ||
    typeof f.dst !== "string" ||
    typeof f.sport !== "number" ||
    typeof f.dport !== "number" ||
    typeof f.cookie !== "bigint"
  )
    throw new QueryError(
      "socket",
      "(an object)",
      "expected a socket as listSockets or iterateSockets returned it, or a copy with its fields",
    );
  const words = (field: "src" | "dst") => {
    const text = socket[field];
    const w = socket.family === "inet6" ? parseIPv6(text) : [parseIPv4(text)];
    if (!w || w.includes(undefined as never))
      throw new QueryError(
        field,
        String(text),
        `not an ${socket.family === "inet6" ? "IPv6" : "IPv4"} address`,
      );
    return w as number[];
  };
  return InetSocket.build({
    family: socket.family,
    protocol: socket.protocol,
    sport: socket.sport,
    dport: socket.dport,
    srcWords: words("src"),
    dstWords: words("dst"),
    ifindex: socket.ifindex,
    cookie: socket.cookie,
    netns: socket.netns,
    rawProtocol: socket.rawProtocol,
  });
}
