/**
 * Scan: one namespace's part of a query — a netlink socket opened there, and the filter compiled
 * there (its `dev` names and port range are that namespace's). Listing and destroying both start
 * from one.
 */
import { NETLINK_SOCK_DIAG } from "../diag/constants.js";
import type { NetlinkConnection } from "../netlink/index.js";
import { openNetlinkIn } from "../netns/index.js";
import { Dumper, type DumpOptions } from "./dump.js";
import { compileIn } from "./filtering.js";
import type { QueryPlan } from "./query.js";
import type { Target } from "./targets.js";

export class Scan implements Disposable {
  readonly conn: NetlinkConnection;
  readonly dumper: Dumper;
  readonly options: DumpOptions;

  /** Open the socket in `target` and compile `plan`'s filter there. The caller closes the scan. */
  constructor(
    readonly target: Target,
    readonly plan: QueryPlan,
  ) {
    this.conn = openNetlinkIn(target.netns, NETLINK_SOCK_DIAG);
    try {
      this.dumper = new Dumper(this.conn);
      this.options = {
        attributes: plan.attributes,
        netns: target.ref,
        ...compileIn(plan.filter, target.netns),
      };
    } catch (err) {
      this.conn.close();
      throw err;
    }
  }

  /** Another netlink socket in the same namespace; the caller owns it. */
  openAnother(): NetlinkConnection {
    return openNetlinkIn(this.target.netns, NETLINK_SOCK_DIAG);
  }

  [Symbol.dispose](): void {
    this.conn.close();
  }
}
