/**
 * create(): a new, unpinned network namespace, optionally with its loopback interface up.
 */
import {
  collectAcks,
  MessageWriter,
  NetlinkError,
  NLM_F_ACK,
  NLM_F_REQUEST,
  NLMSG_HDRLEN,
} from "../netlink/index.js";
import { ifNameToIndex } from "../sys/index.js";
import { openNetlinkIn, runIn, threadNetns } from "./enter.js";
import { NetnsError } from "./errors.js";
import type { NetNS } from "./handle.js";

// linux/netlink.h, linux/rtnetlink.h, linux/if.h
const NETLINK_ROUTE = 0;
const RTM_NEWLINK = 16;
const AF_UNSPEC = 0;
const IFF_UP = 0x1;
// struct ifinfomsg { unsigned char ifi_family; unsigned char __ifi_pad; unsigned short ifi_type;
//                    int ifi_index; unsigned ifi_flags; unsigned ifi_change; };
const IFINFOMSG_LEN = 16;

/** Options for create() and add(). */
export interface CreateOptions {
  /** Bring `lo` up (a new namespace's loopback is down, so 127.0.0.1 is unreachable). Default false. */
  loopbackUp?: boolean;
}

/**
 * create makes a new network namespace that nothing pins: it lives while the returned handle (or a
 * process, or a pin made later) holds it. The caller owns the handle. The calling thread never stays
 * in it. Needs CAP_SYS_ADMIN. Throws NetnsError, NetnsRestoreError (fatal).
 */
export function create(options: CreateOptions = {}): NetNS {
  const ns = threadNetns.unshareNew();
  try {
    if (options.loopbackUp) setLinkUp(ns, "lo");
    return ns;
  } catch (err) {
    ns.close();
    throw err;
  }
}

/**
 * setLinkUp sets IFF_UP on interface `ifname` of `ns` with one RTM_NEWLINK request (what
 * `ip link set IFNAME up` sends): ifi_flags = ifi_change = IFF_UP, every other flag left as it is.
 */
function setLinkUp(ns: NetNS, ifname: string): void {
  const index = runIn(ns, () => ifNameToIndex(ifname));
  if (index === 0) throw new NetnsError(ns.label, `has no interface ${JSON.stringify(ifname)}`);
  using conn = openNetlinkIn(ns, NETLINK_ROUTE, { receiveTimeoutMs: 5000, receiveBufferBytes: 8192 });
  const w = new MessageWriter(Buffer.alloc(NLMSG_HDRLEN + IFINFOMSG_LEN));
  const seq = conn.nextSeq();
  w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq);
  const o = w.reserve(IFINFOMSG_LEN);
  w.buf.writeUInt8(AF_UNSPEC, o);
  w.buf.writeInt32LE(index, o + 4);
  w.buf.writeUInt32LE(IFF_UP, o + 8);
  w.buf.writeUInt32LE(IFF_UP, o + 12);
  w.end();
  conn.send(w.buf, w.length);
  collectAcks(conn, seq, 1, `RTM_NEWLINK ${ifname} up`, (_, errno) => {
    if (errno !== 0) {
      throw new NetnsError(
        ns.label,
        `cannot bring ${ifname} up`,
        new NetlinkError("RTM_NEWLINK", errno, seq),
      );
    }
  });
}
