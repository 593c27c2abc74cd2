import { sockdiagError } from "../sys/errors.js";

/**
 * FlushGuardError: a conntrack DELETE request without a complete tuple was about to be written or
 * sent. The kernel reads such a request as "flush the whole table" (nf_conntrack_netlink.c
 * ctnetlink_del_conntrack), so it is refused here, before any byte reaches the kernel.
 */
export class FlushGuardError extends sockdiagError("FlushGuardError", "ERR_SOCKDIAG_CONNTRACK_FLUSH_GUARD") {
  constructor(detail: string) {
    super(
      `refusing to send a conntrack DELETE without a complete tuple (the kernel would flush the table): ${detail}`,
    );
  }
}
