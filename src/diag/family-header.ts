/**
 * What packet_diag_msg, netlink_diag_msg, vsock_diag_msg and xdp_diag_msg begin alike: a family
 * byte, then the socket type (SOCK_* of linux/net.h).
 */
import { DecodeError } from "../netlink/index.js";

/** The socket types each family comes in, by their SOCK_* number. */
export type SocketTypes<T extends string> = Readonly<Record<number, T>>;

/** SOCK_DGRAM and SOCK_RAW, the types packet and netlink sockets come in. */
export const RAW_OR_DGRAM: SocketTypes<"raw" | "dgram"> = { 2: "dgram", 3: "raw" };

/**
 * Check that buf[o, o + len) holds a whole `struct` of `size` bytes and return its socket type
 * (byte 1), one of `types`. Throws DecodeError naming the struct and the offending byte.
 */
export function checkedSocketType<T extends string>(
  buf: Buffer,
  o: number,
  len: number,
  struct: string,
  size: number,
  types: SocketTypes<T>,
): T {
  if (len < size || o + len > buf.length) throw new DecodeError(struct, o, `${len} bytes, needs ${size}`);
  const type = types[buf[o + 1]!];
  if (!type) throw new DecodeError(struct, o + 1, `unknown socket type ${buf[o + 1]}`);
  return type;
}
