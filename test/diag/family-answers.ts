/**
 * Answers of the families this kernel cannot list, built from their structs in layout.ts, shared by
 * the decoder, table and promises tests: an xdp_diag_msg with every attribute xsk_diag_fill puts,
 * each field a value of its own (the 64-bit ones past 32 bits).
 */
import {
  nlattr,
  pack,
  SK_MEMINFO,
  u32,
  XDP_DIAG_INFO,
  XDP_DIAG_MSG,
  XDP_DIAG_STATS,
  XDP_DIAG_UMEM,
} from "./layout.js";

/** xdp_diag_msg { ino 991, cookie 0x2_0000_0010 } bound to interface 5 queue 2, uid 1001; `details`: rings, umem, stats. */
export function xdpAnswer(details: boolean): Buffer {
  return Buffer.concat([
    pack(XDP_DIAG_MSG, {
      xdiag_family: 44,
      xdiag_type: 3,
      xdiag_ino: 991,
      "xdiag_cookie[0]": 0x10,
      "xdiag_cookie[1]": 2,
    }),
    nlattr(1, pack(XDP_DIAG_INFO, { ifindex: 5, queue_id: 2 })),
    nlattr(2, u32(1001)),
    ...(details
      ? [
          nlattr(3, u32(2048)),
          nlattr(4, u32(1024)),
          nlattr(
            5,
            pack(XDP_DIAG_UMEM, {
              size: 0x1_0000_0000n,
              id: 11,
              num_pages: 12,
              chunk_size: 13,
              headroom: 14,
              ifindex: 15,
              queue_id: 16,
              flags: 1,
              refs: 17,
            }),
          ),
          nlattr(6, u32(512)),
          nlattr(7, u32(256)),
          nlattr(
            9,
            pack(XDP_DIAG_STATS, {
              n_rx_dropped: 21n,
              n_rx_invalid: 22n,
              n_rx_full: 23n,
              n_fill_ring_empty: 24n,
              n_tx_invalid: 25n,
              n_tx_ring_empty: 0x1_0000_001an,
            }),
          ),
        ]
      : []),
    nlattr(8, pack(SK_MEMINFO, { SK_MEMINFO_RMEM_ALLOC: 640, SK_MEMINFO_RCVBUF: 650, SK_MEMINFO_DROPS: 1 })),
  ]);
}
