/**
 * What packet_diag_msg and netlink_diag_msg begin alike: a family byte, then the socket type.
 */
import { DecodeError } from "../netlink/index.js";

/** SOCK_DGRAM and SOCK_RAW, the types packet and netlink sockets come in. */
const TYPES: Readonly<Record<number, "raw" | "dgram">> = { 2: "dgram", 3: "raw" };

/**
 * Check that buf[o, o + len) holds a whole `struct` of `size` bytes and return its socket type
 * (byte 1). Throws DecodeError naming the struct and the offending byte.
 */
export function checkedSocketType(
  buf: Buffer,
  o: number,
  len: number,
  struct: string,
  size: number,
): "raw" | "dgram" {
  if (len < size || o + len > buf.length) throw new DecodeError(struct, o, `${len} bytes, needs ${size}`);
  const type = TYPES[buf[o + 1]!];
  if (!type) throw new DecodeError(struct, o + 1, `unknown socket type ${buf[o + 1]}`);
  return type;
}
