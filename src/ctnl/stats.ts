/**
 * The per-namespace entry count (IPCTNL_MSG_CT_GET_STATS). Every dump walks the kernel's conntrack
 * hash, which all namespaces share, so dumping an empty namespace costs as much as dumping a busy
 * one; the kernel answers this request from the namespace's own counter (ctnetlink_stat_ct), which
 * lets a caller skip the dump where there is nothing to find.
 */
import { AttributeReader, type MessageWriter, NLM_F_ACK, NLM_F_REQUEST } from "../netlink/index.js";
import { be32 } from "./attributes.js";
import { AF_UNSPEC, ctnlType, NFGENMSG_LEN, NFNETLINK_V0 } from "./constants.js";

/** enum cntl_msg_types: IPCTNL_MSG_CT_GET_STATS. */
export const IPCTNL_MSG_CT_GET_STATS = 5;
export const CT_GET_STATS = ctnlType(IPCTNL_MSG_CT_GET_STATS);

/** enum ctattr_stats_global. */
export const CTA_STATS_GLOBAL_ENTRIES = 1;
export const CTA_STATS_GLOBAL_MAX_ENTRIES = 2;

/**
 * Write the request for the namespace's counters. With NLM_F_ACK the answer always ends in an
 * NLMSG_ERROR (status 0 after the counters), so a reader knows when it is over.
 */
export function writeStatsRequest(w: MessageWriter, seq: number): void {
  w.begin(CT_GET_STATS, NLM_F_REQUEST | NLM_F_ACK, seq);
  const at = w.reserve(NFGENMSG_LEN);
  w.buf[at] = AF_UNSPEC;
  w.buf[at + 1] = NFNETLINK_V0;
  w.end();
}

/**
 * The entry count in a CT_GET_STATS answer's payload buf[offset, offset+length) (nfgenmsg, then
 * attributes); undefined when the answer does not carry CTA_STATS_GLOBAL_ENTRIES intact.
 */
export function decodeStatsEntries(buf: Buffer, offset: number, length: number): number | undefined {
  if (length < NFGENMSG_LEN) return undefined;
  const r = new AttributeReader().reset(buf, offset + NFGENMSG_LEN, offset + length, "conntrack stats");
  let entries: number | undefined;
  while (r.next()) {
    if (r.type !== CTA_STATS_GLOBAL_ENTRIES) continue;
    const value = be32(r);
    if (r.error) return undefined;
    entries = value;
  }
  return r.error ? undefined : entries;
}
