/** ctnl/: the ctnetlink wire format (nested, big-endian attributes) — entries, dump and delete requests. */
export * from "./constants.js";
export {
  type ConntrackEntry,
  type ConntrackTuple,
  EntryDecoder,
  statusFlags,
  type TupleSpan,
} from "./entry.js";
export { FlushGuardError } from "./errors.js";
export { CT_PROTOCOLS, hasPorts, protocolName } from "./protocols.js";
export {
  assertNoFlush,
  checkTuple,
  type DumpFilter,
  type TupleFilter,
  writeDeleteRequest,
  writeDumpRequest,
} from "./request.js";
