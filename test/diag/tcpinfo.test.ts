/**
 * decodeTcpInfo against struct tcp_info of linux/tcp.h (offsets in test/diag/layout.ts), whole and cut
 * at every length a kernel might send; decodeSkMemInfo against the SK_MEMINFO_* array.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { decodeSkMemInfo } from "../../src/diag/meminfo.js";
import { decodeTcpInfo } from "../../src/diag/tcpinfo.js";
import { DecodeError } from "../../src/netlink/index.js";
import { pack, SK_MEMINFO, TCP_INFO, type Values } from "./layout.js";

const WSCALE = "tcpi_snd_wscale:4,tcpi_rcv_wscale:4";
const FLAGS7 = "tcpi_delivery_rate_app_limited:1,tcpi_fastopen_client_fail:2";

/** The property name decodeTcpInfo gives a C field: tcpi_snd_mss -> sndMss. */
const camel = (c: string) =>
  c.replace(/^tcpi_/, "").replace(/_([a-z])/g, (_, ch: string) => ch.toUpperCase());

/** Expected decoded object of the first `length` bytes of `values`, derived from the layout alone. */
function expected(values: Values, length: number): Record<string, number | bigint> {
  const out: Record<string, number | bigint> = {};
  for (const x of TCP_INFO.fields) {
    const size = x.kind === "u8" ? 1 : x.kind === "u64" ? 8 : 4;
    if (x.offset + size > length) continue;
    const v = values[x.name] ?? 0;
    if (x.name === WSCALE) {
      out.sndWscale = Number(v) & 0xf;
      out.rcvWscale = Number(v) >> 4;
    } else if (x.name === FLAGS7) {
      out.deliveryRateAppLimited = Number(v) & 1;
      out.fastopenClientFail = (Number(v) >> 1) & 3;
    } else {
      out[camel(x.name)] = v;
    }
  }
  return out;
}

/** Distinct values: u8 fields their offset + 1, u32 0xA000 + offset, u64 above 2^32. */
function distinct(): Values {
  const v: Values = {};
  for (const x of TCP_INFO.fields) {
    v[x.name] =
      x.kind === "u64"
        ? (0xbeefn << 32n) + BigInt(x.offset)
        : x.kind === "u8"
          ? x.offset + 1
          : 0xa000 + x.offset;
  }
  v[WSCALE] = 0x9e; // snd_wscale 14 (low nibble), rcv_wscale 9
  v[FLAGS7] = 0b111; // app_limited 1, fastopen_client_fail 3
  return v;
}

describe("decodeTcpInfo", () => {
  test("every field of the 232-byte struct tcp_info, by offset", () => {
    const values = distinct();
    const info = decodeTcpInfo(pack(TCP_INFO, values), 0, 232);
    assert.deepEqual(info, expected(values, 232));
    assert.equal(info.sndMss, 0xa000 + 16);
    assert.equal(info.pacingRate, (0xbeefn << 32n) + 104n);
    assert.equal(info.sndWnd, 0xa000 + 228);
  });

  test("bit fields of bytes 6 and 7: snd_wscale low nibble, rcv_wscale high; app_limited bit 0, client_fail bits 1-2", () => {
    const info = decodeTcpInfo(pack(TCP_INFO, { [WSCALE]: 0x9e, [FLAGS7]: 0b110 }), 0, 232);
    assert.deepEqual(
      [info.sndWscale, info.rcvWscale, info.deliveryRateAppLimited, info.fastopenClientFail],
      [14, 9, 0, 3],
    );
  });

  test("a shorter struct (older kernel) yields exactly the fields that fit, at every length 0..232", () => {
    const values = distinct();
    const buf = pack(TCP_INFO, values);
    for (let length = 0; length <= 232; length++) {
      assert.deepEqual(decodeTcpInfo(buf, 0, length), expected(values, length), `length ${length}`);
    }
  });

  test("a longer struct (newer kernel) and a non-zero offset: extra bytes are ignored", () => {
    const values = distinct();
    const buf = Buffer.concat([Buffer.alloc(12, 0xff), pack(TCP_INFO, values), Buffer.alloc(40, 0xff)]);
    assert.deepEqual(decodeTcpInfo(buf, 12, 232 + 40), expected(values, 232));
  });

  test("a length running past the buffer is a DecodeError, not a RangeError", () => {
    const buf = pack(TCP_INFO, distinct()).subarray(0, 100);
    assert.throws(() => decodeTcpInfo(buf, 0, 232), DecodeError);
    assert.throws(() => decodeTcpInfo(buf, 90, 20), DecodeError);
  });
});

describe("decodeSkMemInfo", () => {
  const names = [
    "rmemAlloc",
    "rcvbuf",
    "wmemAlloc",
    "sndbuf",
    "fwdAlloc",
    "wmemQueued",
    "optmem",
    "backlog",
    "drops",
  ];
  const values = Object.fromEntries(SK_MEMINFO.fields.map((x, i) => [x.name, 0x10000 * (i + 1) + i]));

  test("nine SK_MEMINFO_* entries in index order", () => {
    assert.deepEqual(
      decodeSkMemInfo(pack(SK_MEMINFO, values), 0, 36),
      Object.fromEntries(names.map((n, i) => [n, 0x10000 * (i + 1) + i])),
    );
  });

  test("eight entries (no SK_MEMINFO_DROPS) leave drops out; a tenth is ignored", () => {
    const buf = Buffer.concat([Buffer.alloc(4), pack(SK_MEMINFO, values), Buffer.alloc(4, 0xff)]);
    const eight = decodeSkMemInfo(buf, 4, 32);
    assert.equal(eight.backlog, 0x80007);
    assert.equal("drops" in eight, false);
    assert.equal(decodeSkMemInfo(buf, 4, 40).drops, 0x90008);
  });
});
