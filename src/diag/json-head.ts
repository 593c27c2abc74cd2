/** The head of a unix, packet or netlink socket's JSON: the fields each starts with, in this order. */
import type { SocketNetns } from "./socket.js";
import type { StateName } from "./states.js";

/** The fields every non-inet socket's toJSON starts with: netns (its label), family, protocol, type, state. */
export function jsonHead(s: {
  netns?: SocketNetns | undefined;
  family: string;
  protocol: string;
  type: string;
  state: StateName;
}): Record<string, unknown> {
  return {
    netns: s.netns?.label ?? null,
    family: s.family,
    protocol: s.protocol,
    type: s.type,
    state: s.state,
  };
}
