/** ctnl/: the ctnetlink wire format (nested, big-endian attributes) — entries, dump, delete and stats requests. */
export * from "./constants.js";
export {
  type ByteSpan,
  type ConntrackEntry,
  type ConntrackTuple,
  EntryDecoder,
  type EntrySpans,
  statusFlags,
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
  writeProbeDelete,
} from "./request.js";
export {
  CT_GET_STATS,
  CTA_STATS_GLOBAL_ENTRIES,
  CTA_STATS_GLOBAL_MAX_ENTRIES,
  decodeStatsEntries,
  IPCTNL_MSG_CT_GET_STATS,
  writeStatsRequest,
} from "./stats.js";
