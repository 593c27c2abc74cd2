/**
 * The typed syntax tree of ss's filter language (iproute2 misc/ssfilter.y). Nodes are plain, frozen-shape
 * data: JSON-serialisable (no bigint, no class), and an optional field is absent rather than `undefined`,
 * so two trees for the same filter are `deepStrictEqual`.
 */

/** Which end of the socket a condition looks at: the local (`src`, `sport`) or remote (`dst`, `dport`) end. */
export type Side = "src" | "dst";

/** A port comparison, by its mnemonic (ss also spells them `=`, `!=`, `<`, `<=`, `>`, `>=`, ...). */
export type PortOp = "eq" | "ne" | "lt" | "le" | "gt" | "ge";

/**
 * HostPrefix is an address with a prefix length, as ss's `inet_prefix`: `10.0.0.0/8`, `::1` (/128).
 * `address` is canonical text (dotted quad; RFC 5952 for IPv6). Host bits past the prefix are kept as
 * written, as ss keeps them: only the first `prefixLength` bits are ever compared.
 */
export interface HostPrefix {
  family: "inet" | "inet6";
  address: string;
  prefixLength: number;
}

/**
 * HostCond is `src ADDR[:PORT]` / `dst ADDR[:PORT]` (ss's SSF_SCOND/SSF_DCOND): with neither an address
 * nor a port (`src *`) it matches every socket; with only a port (`dst :53`) it matches any family.
 */
export interface HostCond {
  type: "host";
  side: Side;
  prefix?: HostPrefix;
  port?: number;
}

/** PortCond is `sport OP PORT` / `dport OP PORT`. */
export interface PortCond {
  type: "port";
  side: Side;
  op: PortOp;
  port: number;
}

/** DevCond is `dev NAME|INDEX`: the socket is bound to that interface (SO_BINDTODEVICE, idiag_if). */
export interface DevCond {
  type: "dev";
  /** The word as given; resolved to an ifindex in the socket's namespace when the filter is compiled. */
  device: string;
}

/** MarkCond is `fwmark MARK[/MASK]`: `(sk_mark & mask) == mark`. Both are unsigned 32-bit. */
export interface MarkCond {
  type: "fwmark";
  mark: number;
  mask: number;
}

/** CgroupCond is `cgroup PATH`: the socket belongs to that cgroup v2 (compared by cgroup id). */
export interface CgroupCond {
  type: "cgroup";
  path: string;
}

/** AutoboundCond is `autobound`: the local port was picked by the kernel, not bound by the program. */
export interface AutoboundCond {
  type: "autobound";
}

/** Both operands hold (`and`, `&`, `&&`, or two terms side by side). */
export interface AndNode {
  type: "and";
  left: FilterNode;
  right: FilterNode;
}

/** Either operand holds (`or`, `|`, `||`). */
export interface OrNode {
  type: "or";
  left: FilterNode;
  right: FilterNode;
}

/** The operand does not hold (`not`, `!`). */
export interface NotNode {
  type: "not";
  operand: FilterNode;
}

/** A condition on one socket, a leaf of the tree. */
export type FilterLeaf = HostCond | PortCond | DevCond | MarkCond | CgroupCond | AutoboundCond;

/** Any node of a filter tree. */
export type FilterNode = FilterLeaf | AndNode | OrNode | NotNode;
