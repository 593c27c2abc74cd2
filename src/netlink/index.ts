export { type NetlinkConnection, type NetlinkOptions, NetlinkSocket } from "./connection.js";
export { DecodeError, NetlinkError, NetlinkProtocolError, NetlinkTimeoutError } from "./errors.js";
export {
  BARRIER_BYTES,
  type BatchOptions,
  batchCapacity,
  batchErrno,
  collectAcks,
  collectErrors,
  DumpCursor,
  ErrorsOnlyBatch,
  writeBarrier,
} from "./exchange.js";
export * from "./message.js";
