/**
 * The stats request and its answer against bytes built by the independent test builder: GET_STATS
 * with NLM_F_REQUEST | NLM_F_ACK and an AF_UNSPEC nfgenmsg, and the entry count read from a
 * kernel-like answer — or no count when the answer lacks it or is cut short.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeStatsEntries, writeStatsRequest } from "../../src/ctnl/index.js";
import { MessageWriter } from "../../src/netlink/index.js";
import { nlattr, nlmsg } from "../diag/layout.js";
import { be32, nfgenmsg, STATS, statsMessage, T } from "./ct-layout.js";

const NLM_F_REQUEST = 1;
const NLM_F_ACK = 4;
const HDR = 16;

describe("writeStatsRequest", () => {
  test("GET_STATS with REQUEST|ACK and nfgenmsg AF_UNSPEC, nothing else", () => {
    const w = new MessageWriter(Buffer.alloc(64, 0xaa));
    writeStatsRequest(w, 77);
    assert.deepEqual(
      Buffer.from(w.buf.subarray(0, w.length)),
      nlmsg({ type: T.GET_STATS, flags: NLM_F_REQUEST | NLM_F_ACK, seq: 77 }, nfgenmsg(0)),
    );
  });
});

describe("decodeStatsEntries", () => {
  const payloadOf = (msg: Buffer) => [msg, HDR, msg.readUInt32LE(0) - HDR] as const;

  test("reads CTA_STATS_GLOBAL_ENTRIES (big-endian), not the maximum", () => {
    assert.equal(decodeStatsEntries(...payloadOf(statsMessage(0, 1))), 0);
    assert.equal(decodeStatsEntries(...payloadOf(statsMessage(70000, 1, 5))), 70000);
  });

  test("an answer without the count, or with it cut short, has no count", () => {
    const maxOnly = nlmsg(
      { type: T.GET_STATS, flags: 0, seq: 1 },
      nfgenmsg(0),
      nlattr(STATS.MAX_ENTRIES, be32(9)),
    );
    assert.equal(decodeStatsEntries(...payloadOf(maxOnly)), undefined);
    const short = nlmsg(
      { type: T.GET_STATS, flags: 0, seq: 1 },
      nfgenmsg(0),
      nlattr(STATS.ENTRIES, Buffer.from([0, 0])),
    );
    assert.equal(decodeStatsEntries(...payloadOf(short)), undefined);
    assert.equal(decodeStatsEntries(Buffer.alloc(2), 0, 2), undefined);
  });
});
