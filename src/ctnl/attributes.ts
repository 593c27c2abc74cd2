/**
 * ctnetlink attributes: nested, and integers in network byte order — unlike sock_diag, whose
 * attributes are flat and host order. Reading goes through netlink's AttributeReader (its type is
 * already masked with NLA_TYPE_MASK, so NLA_F_NESTED never spoils a comparison); these helpers add
 * the big-endian getters. Writing appends to a MessageWriter through `reserve`, so nests can be
 * opened and back-patched without the writer knowing about them.
 */
import { type AttributeReader, align4, type MessageWriter, NLA_HDRLEN } from "../netlink/index.js";
import { NLA_F_NESTED } from "./constants.js";

/** The payload as a be16 (ports, CTA_ZONE); 0 and a sticky error when shorter. */
export function be16(r: AttributeReader): number {
  return r.need(2) ? r.buf.readUInt16BE(r.offset) : 0;
}

/** The payload as a be32 (CTA_STATUS, CTA_TIMEOUT, CTA_MARK, CTA_ID, CTA_USE). */
export function be32(r: AttributeReader): number {
  return r.need(4) ? r.buf.readUInt32BE(r.offset) : 0;
}

/** Start a nested attribute (type | NLA_F_NESTED); returns its offset for endNest. */
export function beginNest(w: MessageWriter, type: number): number {
  const at = w.reserve(NLA_HDRLEN);
  w.buf.writeUInt16LE(type | NLA_F_NESTED, at + 2);
  return at;
}

/** Close the nest begun at `at`: patch its nla_len. */
export function endNest(w: MessageWriter, at: number): void {
  w.buf.writeUInt16LE(w.length - at, at);
}

function attrHeader(w: MessageWriter, type: number, payload: number): number {
  const at = w.reserve(align4(NLA_HDRLEN + payload));
  w.buf.writeUInt16LE(NLA_HDRLEN + payload, at);
  w.buf.writeUInt16LE(type, at + 2);
  return at + NLA_HDRLEN;
}

/** Append a u8 attribute (CTA_PROTO_NUM). */
export function putU8(w: MessageWriter, type: number, value: number): void {
  w.buf[attrHeader(w, type, 1)] = value;
}

/** Append a be16 attribute. */
export function putBe16(w: MessageWriter, type: number, value: number): void {
  w.buf.writeUInt16BE(value, attrHeader(w, type, 2));
}

/** Append a be32 attribute. */
export function putBe32(w: MessageWriter, type: number, value: number): void {
  w.buf.writeUInt32BE(value >>> 0, attrHeader(w, type, 4));
}

/** Append a host-order u32 attribute (CTA_FILTER_*_FLAGS are NLA_U32, not big-endian). */
export function putU32(w: MessageWriter, type: number, value: number): void {
  w.buf.writeUInt32LE(value >>> 0, attrHeader(w, type, 4));
}

/** Append an attribute whose payload is `src[start, end)` (an address). */
export function putBytes(w: MessageWriter, type: number, src: Uint8Array, start = 0, end = src.length): void {
  const at = attrHeader(w, type, end - start);
  w.buf.set(src.subarray(start, end), at);
}
