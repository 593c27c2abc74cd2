/**
 * How the answers of the families with a sock_diag handler of their own (packet, netlink, vsock,
 * tipc, xdp) become sockets: one decoder per dump, which names the interfaces packet and XDP
 * sockets are bound to (asked of the dump's own connection, so in the dump's namespace, once per
 * interface) and keeps only the socket types asked for (these handlers cannot be asked for one).
 */
import type { FamilyProtocol } from "../diag/family-request.js";
import { decodeNetlinkDiagMsg } from "../diag/netlink-diag.js";
import { decodePacketDiagMsg } from "../diag/packet.js";
import type { Socket, SocketNetns } from "../diag/socket.js";
import { decodeTipcDiagMsg } from "../diag/tipc.js";
import { decodeVsockDiagMsg } from "../diag/vsock.js";
import { decodeXdpDiagMsg } from "../diag/xdp.js";
import type { DecodeScratch, NetlinkConnection } from "../netlink/index.js";

/** Decodes one answer message's payload at buf[offset, offset + length): a socket, or none to keep. */
export type Decode = (buf: Buffer, offset: number, length: number) => Socket | undefined;

/** Sockets whose type is not in `types` (when given) are left out; the rest get `netns`. */
export function familyDecoder(
  protocol: FamilyProtocol,
  conn: NetlinkConnection,
  scratch: DecodeScratch,
  netns: SocketNetns | undefined,
  types?: ReadonlySet<string>,
): Decode {
  const decode = DECODERS[protocol];
  const names = new Map<number, string>();
  // ss's ll_index_to_name: "if" and the index for an interface it cannot name.
  const nameOf = (ifindex: number) => {
    let name = names.get(ifindex);
    if (name === undefined) {
      name = conn.interfaceName?.(ifindex) ?? `if${ifindex}`;
      names.set(ifindex, name);
    }
    return name;
  };
  return (buf, o, len) => {
    const s = decode(buf, o, len, scratch);
    if (!s || (types && !types.has(s.type))) return undefined;
    s.netns = netns;
    if ((s.family === "packet" || s.family === "xdp") && s.ifindex !== 0) s.interface = nameOf(s.ifindex);
    return s;
  };
}

type FamilySocket = Exclude<Socket, { family: "inet" | "inet6" | "unix" }>;

const DECODERS: Readonly<
  Record<
    FamilyProtocol,
    (buf: Buffer, o: number, len: number, scratch: DecodeScratch) => FamilySocket | undefined
  >
> = {
  packet: decodePacketDiagMsg,
  netlink: decodeNetlinkDiagMsg,
  vsock: decodeVsockDiagMsg,
  tipc: decodeTipcDiagMsg,
  xdp: decodeXdpDiagMsg,
};
