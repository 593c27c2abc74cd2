export { AttributeReader } from "./attributes.js";
export {
  BARRIER_BYTES,
  batchCapacity,
  batchErrno,
  collectAcks,
  collectErrors,
  writeBarrier,
} from "./batch.js";
export { type NetlinkConnection, type NetlinkOptions, NetlinkSocket } from "./connection.js";
export * from "./constants.js";
export { DumpCursor } from "./dump.js";
export { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "./errors.js";
export { MessageReader } from "./reader.js";
export { MessageWriter, putU32LE } from "./writer.js";
