/** A UDP socket of this process made inside a namespace, connected to an address, for the one-pass tests. */
import { inNetns } from "../../src/netns/enter.js";
import { fromPath } from "../../src/netns/open.js";
import {
  AF_INET,
  connect,
  IPPROTO_UDP,
  SOCK_DGRAM,
  SOL_SOCKET,
  setsockopt,
  socket,
} from "../../src/sys/socket.js";
import { sockaddrIn, sockaddrIn6 } from "./sockaddr.js";

const SO_BINDTODEVICE = 25;

/**
 * A UDP socket made inside the namespace pinned at `path` (the host's when undefined), bound to
 * `device` when given, connected to `address`:`port`: its descriptor.
 */
export function connectedUdpIn(
  path: string | undefined,
  family: number,
  address: string,
  port: number,
  device?: string,
): number {
  const ns = path === undefined ? undefined : fromPath(path);
  try {
    return inNetns(ns, () => {
      const s = socket(family, SOCK_DGRAM, IPPROTO_UDP);
      if (device) setsockopt(s, SOL_SOCKET, SO_BINDTODEVICE, Buffer.from(`${device}\0`));
      connect(s, family === AF_INET ? sockaddrIn(address, port) : sockaddrIn6(address, port));
      return s;
    });
  } finally {
    ns?.close();
  }
}
