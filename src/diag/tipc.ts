/**
 * tipc_diag answers: a SOCK_DIAG_BY_FAMILY message whose payload is attributes only, nested as
 * net/tipc/socket.c tipc_sk_fill_sock_diag puts them (linux/tipc_netlink.h):
 *   TIPC_NLA_SOCK { REF, ADDR, CON { NODE, SOCK, [FLAG, TYPE, INST] } | HAS_PUBL, TYPE, TIPC_STATE,
 *                   INO, UID, [PAD], COOKIE, STAT { RCVQ, SENDQ, DROP, [LINK_CONG], [CONN_CONG] },
 *                   [GROUP { ID, INSTANCE, BC_SEND_NEXT, [NODE_SCOPE | CLUSTER_SCOPE], [OPEN] }] }
 * A socket the request's states leave out still gets a message, with nothing in it
 * (net/tipc/diag.c __tipc_add_sock_diag): that one decodes to no socket.
 */
import { type AttributeReader, DecodeError, DecodeScratch } from "../netlink/index.js";
import { stateName } from "./states.js";
import { type TipcConnection, type TipcGroup, TipcSocket, type TipcType } from "./tipc-socket.js";

// Top level (enum { TIPC_NLA_UNSPEC, TIPC_NLA_BEARER, TIPC_NLA_SOCK, ... }).
const TIPC_NLA_SOCK = 2;
// In TIPC_NLA_SOCK.
const TIPC_NLA_SOCK_ADDR = 1;
const TIPC_NLA_SOCK_REF = 2;
const TIPC_NLA_SOCK_CON = 3;
const TIPC_NLA_SOCK_HAS_PUBL = 4;
const TIPC_NLA_SOCK_STAT = 5;
const TIPC_NLA_SOCK_TYPE = 6;
const TIPC_NLA_SOCK_INO = 7;
const TIPC_NLA_SOCK_UID = 8;
const TIPC_NLA_SOCK_TIPC_STATE = 9;
const TIPC_NLA_SOCK_COOKIE = 10;
const TIPC_NLA_SOCK_GROUP = 12;
// In TIPC_NLA_SOCK_CON.
const TIPC_NLA_CON_FLAG = 1;
const TIPC_NLA_CON_NODE = 2;
const TIPC_NLA_CON_SOCK = 3;
const TIPC_NLA_CON_TYPE = 4;
const TIPC_NLA_CON_INST = 5;
// In TIPC_NLA_SOCK_STAT: this enum starts at 0.
const TIPC_NLA_SOCK_STAT_RCVQ = 0;
const TIPC_NLA_SOCK_STAT_SENDQ = 1;
const TIPC_NLA_SOCK_STAT_LINK_CONG = 2;
const TIPC_NLA_SOCK_STAT_CONN_CONG = 3;
const TIPC_NLA_SOCK_STAT_DROP = 4;
// In TIPC_NLA_SOCK_GROUP: this enum starts at 0 too.
const TIPC_NLA_SOCK_GROUP_ID = 0;
const TIPC_NLA_SOCK_GROUP_OPEN = 1;
const TIPC_NLA_SOCK_GROUP_NODE_SCOPE = 2;
const TIPC_NLA_SOCK_GROUP_CLUSTER_SCOPE = 3;
const TIPC_NLA_SOCK_GROUP_INSTANCE = 4;
const TIPC_NLA_SOCK_GROUP_BC_SEND_NEXT = 5;

/** SOCK_STREAM, SOCK_DGRAM, SOCK_RDM, SOCK_SEQPACKET. */
const TIPC_TYPES: Readonly<Record<number, TipcType>> = { 1: "stream", 2: "dgram", 4: "rdm", 5: "seqpacket" };

const WHAT = "tipc sock_diag attributes";

/**
 * Decode the tipc_diag answer at buf[o, o + len) (the message payload). Returns undefined for the
 * empty message of a socket in a state not asked for. Throws DecodeError on malformed attributes
 * or a socket without TIPC_NLA_SOCK_TYPE.
 */
export function decodeTipcDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): TipcSocket | undefined {
  if (o + len > buf.length) throw new DecodeError(WHAT, o, `${len} bytes, past the buffer`);
  const a = scratch.attrs.reset(buf, o, o + len, WHAT);
  let start = -1;
  let end = -1;
  while (a.next())
    if (a.type === TIPC_NLA_SOCK) {
      start = a.offset;
      end = a.offset + a.length;
    }
  if (a.error) throw a.error;
  if (start < 0) return undefined;
  const s = new TipcSocket(socketType(a.reset(buf, start, end, "TIPC_NLA_SOCK"), start));
  a.reset(buf, start, end, "TIPC_NLA_SOCK");
  while (a.next()) {
    switch (a.type) {
      case TIPC_NLA_SOCK_ADDR:
        s.node = a.u32();
        break;
      case TIPC_NLA_SOCK_REF:
        s.ref = a.u32();
        break;
      case TIPC_NLA_SOCK_CON:
        s.connection = connection(
          scratch.nested.reset(buf, a.offset, a.offset + a.length, "TIPC_NLA_SOCK_CON"),
        );
        break;
      case TIPC_NLA_SOCK_HAS_PUBL:
        s.published = true;
        break;
      case TIPC_NLA_SOCK_STAT:
        stat(scratch.nested.reset(buf, a.offset, a.offset + a.length, "TIPC_NLA_SOCK_STAT"), s);
        break;
      case TIPC_NLA_SOCK_INO:
        s.inode = a.u32();
        break;
      case TIPC_NLA_SOCK_UID:
        s.uid = a.u32();
        break;
      case TIPC_NLA_SOCK_TIPC_STATE:
        s.state = stateName(a.u32());
        break;
      case TIPC_NLA_SOCK_COOKIE:
        s.cookie = a.u64();
        break;
      case TIPC_NLA_SOCK_GROUP:
        s.group = group(scratch.nested.reset(buf, a.offset, a.offset + a.length, "TIPC_NLA_SOCK_GROUP"));
        break;
    }
  }
  if (a.error) throw a.error;
  return s;
}

/** The socket type of the TIPC_NLA_SOCK nest `a` walks (it walks the whole nest). */
function socketType(a: AttributeReader, start: number): TipcType {
  let number = -1;
  while (a.next()) if (a.type === TIPC_NLA_SOCK_TYPE) number = a.u32();
  if (a.error) throw a.error;
  const type = TIPC_TYPES[number];
  if (type) return type;
  throw new DecodeError(
    "TIPC_NLA_SOCK",
    start,
    number < 0 ? "no TIPC_NLA_SOCK_TYPE" : `unknown socket type ${number}`,
  );
}

function connection(a: AttributeReader): TipcConnection {
  const c: TipcConnection = { node: 0, port: 0 };
  let named = false;
  let type = 0;
  let instance = 0;
  while (a.next()) {
    if (a.type === TIPC_NLA_CON_FLAG) named = true;
    else if (a.type === TIPC_NLA_CON_NODE) c.node = a.u32();
    else if (a.type === TIPC_NLA_CON_SOCK) c.port = a.u32();
    else if (a.type === TIPC_NLA_CON_TYPE) type = a.u32();
    else if (a.type === TIPC_NLA_CON_INST) instance = a.u32();
  }
  if (a.error) throw a.error;
  if (named) c.service = { type, instance };
  return c;
}

function stat(a: AttributeReader, s: TipcSocket): void {
  while (a.next()) {
    if (a.type === TIPC_NLA_SOCK_STAT_RCVQ) s.rqueue = a.u32();
    else if (a.type === TIPC_NLA_SOCK_STAT_SENDQ) s.wqueue = a.u32();
    else if (a.type === TIPC_NLA_SOCK_STAT_DROP) s.drops = a.u32();
    else if (a.type === TIPC_NLA_SOCK_STAT_LINK_CONG) s.linkCongested = true;
    else if (a.type === TIPC_NLA_SOCK_STAT_CONN_CONG) s.connCongested = true;
  }
  if (a.error) throw a.error;
}

function group(a: AttributeReader): TipcGroup {
  const g: TipcGroup = { id: 0, instance: 0, bcSendNext: 0, open: false };
  while (a.next()) {
    if (a.type === TIPC_NLA_SOCK_GROUP_ID) g.id = a.u32();
    else if (a.type === TIPC_NLA_SOCK_GROUP_INSTANCE) g.instance = a.u32();
    else if (a.type === TIPC_NLA_SOCK_GROUP_BC_SEND_NEXT) g.bcSendNext = a.u32();
    else if (a.type === TIPC_NLA_SOCK_GROUP_NODE_SCOPE) g.scope = "node";
    else if (a.type === TIPC_NLA_SOCK_GROUP_CLUSTER_SCOPE) g.scope = "cluster";
    else if (a.type === TIPC_NLA_SOCK_GROUP_OPEN) g.open = true;
  }
  if (a.error) throw a.error;
  return g;
}
