/**
 * Socket tables as ss chooses them (misc/ss.c main, filter_db_parse, filter_af_set,
 * filter_merge_defaults): the protocol flags, `-A QUERY`, `-f FAMILY` and the family flags, in the
 * order given, make a set of tables, a set of families and a state mask; each table and family
 * brings its default states, and a table without its family (or a family without a table) brings
 * the other's defaults. The result is what the library is asked for.
 */
import { TCP_CLOSE, TCP_ESTABLISHED, TCP_LISTEN } from "../../diag/constants.js";
import type { InetFamily, PacketType, Protocol, UnixType, VsockType } from "../../diag/socket.js";
import { ALL_STATES, DEFAULT_STATES } from "../../diag/states.js";
import { nearest } from "../../options/index.js";
import { UsageError } from "../io/index.js";

/** ss's socket tables (its *_DB), plus sockdiag's udplite (--udplite; ss has none). */
type Table =
  | "tcp"
  | "mptcp"
  | "udp"
  | "udplite"
  | "raw"
  | "sctp"
  | "unix_stream"
  | "unix_dgram"
  | "unix_seqpacket"
  | "packet_raw"
  | "packet_dgram"
  | "netlink"
  | "vsock_stream"
  | "vsock_dgram"
  | "tipc"
  | "xdp";

/** ss's address families (the AF_* it sets with -4 -6 -x -0 -f ...). */
type Family = InetFamily | "unix" | "packet" | "netlink" | "vsock" | "tipc" | "xdp";

const CONN = DEFAULT_STATES;
const ESTAB = 1 << TCP_ESTABLISHED;
const CLOSE = 1 << TCP_CLOSE;
const INET: readonly Family[] = ["inet", "inet6"];
/** ss's TIPC_SS_CONN. */
const TIPC_CONN = ESTAB | (1 << TCP_LISTEN) | CLOSE;

/** ss's default_dbs: each table's default states and families, and the protocol it is listed with. */
const TABLES: Readonly<Record<Table, { states: number; families: readonly Family[]; protocol: Protocol }>> = {
  tcp: { states: CONN, families: INET, protocol: "tcp" },
  mptcp: { states: CONN, families: INET, protocol: "mptcp" },
  udp: { states: ESTAB, families: INET, protocol: "udp" },
  udplite: { states: ESTAB, families: INET, protocol: "udplite" },
  raw: { states: ESTAB, families: INET, protocol: "raw" },
  sctp: { states: CONN, families: INET, protocol: "sctp" },
  unix_stream: { states: CONN, families: ["unix"], protocol: "unix" },
  unix_dgram: { states: CLOSE, families: ["unix"], protocol: "unix" },
  unix_seqpacket: { states: CONN, families: ["unix"], protocol: "unix" },
  packet_raw: { states: CLOSE, families: ["packet"], protocol: "packet" },
  packet_dgram: { states: CLOSE, families: ["packet"], protocol: "packet" },
  netlink: { states: CLOSE, families: ["netlink"], protocol: "netlink" },
  vsock_stream: { states: CONN, families: ["vsock"], protocol: "vsock" },
  vsock_dgram: { states: CONN, families: ["vsock"], protocol: "vsock" },
  tipc: { states: TIPC_CONN, families: ["tipc"], protocol: "tipc" },
  xdp: { states: CLOSE, families: ["xdp"], protocol: "xdp" },
};

const INET_TABLES: readonly Table[] = ["tcp", "mptcp", "udp", "sctp", "raw"];

/** ss's default_afs: each family's tables and default states. */
const FAMILIES: Readonly<Record<Family, { tables: readonly Table[]; states: number }>> = {
  inet: { tables: INET_TABLES, states: CONN },
  inet6: { tables: INET_TABLES, states: CONN },
  unix: { tables: ["unix_stream", "unix_dgram", "unix_seqpacket"], states: CONN },
  packet: { tables: ["packet_raw", "packet_dgram"], states: CLOSE },
  netlink: { tables: ["netlink"], states: CLOSE },
  vsock: { tables: ["vsock_stream", "vsock_dgram"], states: CONN },
  tipc: { tables: ["tipc"], states: TIPC_CONN },
  xdp: { tables: ["xdp"], states: CLOSE },
};

/** ss's db_name_tbl: the names -A takes (`all` leaves out tipc, as ss's does). */
const QUERY_NAMES: Readonly<Record<string, readonly Table[]>> = {
  all: [
    "udp",
    "tcp",
    "mptcp",
    "raw",
    "unix_stream",
    "unix_dgram",
    "unix_seqpacket",
    "packet_raw",
    "packet_dgram",
    "netlink",
    "sctp",
    "vsock_stream",
    "vsock_dgram",
    "xdp",
  ],
  inet: ["udp", "tcp", "mptcp", "sctp", "raw"],
  udp: ["udp"],
  tcp: ["tcp"],
  mptcp: ["mptcp"],
  sctp: ["sctp"],
  raw: ["raw"],
  unix: ["unix_stream", "unix_dgram", "unix_seqpacket"],
  unix_stream: ["unix_stream"],
  u_str: ["unix_stream"],
  unix_dgram: ["unix_dgram"],
  u_dgr: ["unix_dgram"],
  unix_seqpacket: ["unix_seqpacket"],
  u_seq: ["unix_seqpacket"],
  packet: ["packet_raw", "packet_dgram"],
  packet_raw: ["packet_raw"],
  p_raw: ["packet_raw"],
  packet_dgram: ["packet_dgram"],
  p_dgr: ["packet_dgram"],
  netlink: ["netlink"],
  tipc: ["tipc"],
  vsock: ["vsock_stream", "vsock_dgram"],
  vsock_stream: ["vsock_stream"],
  v_str: ["vsock_stream"],
  vsock_dgram: ["vsock_dgram"],
  v_dgr: ["vsock_dgram"],
  xdp: ["xdp"],
};

/** The names -f takes (`link` is AF_PACKET). */
const FAMILY_NAMES: Readonly<Record<string, Family>> = {
  inet: "inet",
  inet6: "inet6",
  link: "packet",
  unix: "unix",
  netlink: "netlink",
  tipc: "tipc",
  vsock: "vsock",
  xdp: "xdp",
};

/** The command line's table and family flags, by their long names. */
const TABLE_FLAGS: Readonly<Record<string, Table>> = {
  tcp: "tcp",
  udp: "udp",
  udplite: "udplite",
  raw: "raw",
  mptcp: "mptcp",
  sctp: "sctp",
};
const FAMILY_FLAGS: Readonly<Record<string, Family>> = {
  unix: "unix",
  ipv4: "inet",
  ipv6: "inet6",
  packet: "packet",
  netlink: "netlink",
  vsock: "vsock",
  tipc: "tipc",
  xdp: "xdp",
};

/** Names that stand for several protocols: a kernel without one of them is no error. */
const GROUPS: ReadonlySet<string> = new Set(["all", "inet", "inet6"]);

/** What the flags select, for the library. */
export interface TableSelection {
  protocols: Protocol[];
  /** The inet families, when not both. */
  families?: InetFamily[];
  unixTypes?: UnixType[];
  packetTypes?: PacketType[];
  vsockTypes?: VsockType[];
  /** The state mask ss uses. */
  states: number;
  /** The protocols named one by one (a flag, -A NAME, -f NAME): a kernel without them is an error. */
  named: ReadonlySet<Protocol>;
  /** Whether any table or family flag was given (ss's do_default is false). */
  chosen: boolean;
}

/**
 * The tables, families and states that the flags in `order` (long names, as given) select, as ss
 * computes them. `values` holds the -A/-f values in order; `defaults` are the -A names used when
 * no table or family flag is given; `words` applies the state words to the state mask of the
 * flags (0 when neither -a nor -l). Throws UsageError for an unknown -A or -f name, naming the
 * nearest known one.
 */
export function selectTables(
  order: readonly string[],
  values: { query?: readonly string[]; family?: readonly string[] },
  defaults: readonly string[],
  words: (flagStates: number) => number,
): TableSelection {
  const tables = new Set<Table>();
  const families = new Set<Family>();
  const named = new Set<Protocol>();
  let defaultStates = 0;
  let chosen = false;
  let sawQuery = false;
  let flagStates = 0;
  const next = { query: 0, family: 0 };
  const addTable = (t: Table) => {
    tables.add(t);
    defaultStates |= TABLES[t].states;
  };
  const addFamily = (f: Family, name: string) => {
    families.add(f);
    defaultStates |= FAMILIES[f].states;
    if (!GROUPS.has(name)) named.add(TABLES[FAMILIES[f].tables[0]!].protocol);
  };
  for (const option of order) {
    if (option === "all" || option === "listening") flagStates = FLAG_STATES[option];
    else if (Object.hasOwn(TABLE_FLAGS, option)) {
      addTable(TABLE_FLAGS[option]!);
      named.add(TABLES[TABLE_FLAGS[option]!].protocol);
      chosen = true;
    } else if (Object.hasOwn(FAMILY_FLAGS, option)) {
      addFamily(FAMILY_FLAGS[option]!, option === "ipv4" || option === "ipv6" ? "inet" : option);
      chosen = true;
    } else if (option === "family") {
      const name = values.family?.[next.family++] ?? "";
      addFamily(familyNamed(name), name);
      chosen = true;
    } else if (option === "query") {
      // ss: the first -A starts from no table (and from SS_CONN when -a/-l said nothing).
      if (!sawQuery) {
        tables.clear();
        sawQuery = true;
      }
      for (const word of (values.query?.[next.query++] ?? "").split(",")) {
        const remove = word.startsWith("!");
        const name = remove ? word.slice(1) : word;
        for (const t of tablesNamed(name)) {
          if (remove) tables.delete(t);
          else addTable(t);
        }
        if (!remove && !GROUPS.has(name)) for (const t of tablesNamed(name)) named.add(TABLES[t].protocol);
      }
      chosen = true;
    }
  }
  // ss: -A means SS_CONN unless -a or -l; then the state words; then, with no table or family
  // flag at all, SS_CONN again if the words left nothing; an empty mask is the tables' defaults.
  let mask = words(sawQuery && flagStates === 0 ? CONN : flagStates);
  if (!chosen) {
    for (const name of defaults) for (const t of tablesNamed(name)) addTable(t);
    mask ||= CONN;
  }
  mask ||= defaultStates;
  // filter_merge_defaults: a table brings its families when none of them is selected, a family its tables.
  for (const t of tables)
    if (!TABLES[t].families.some((f) => families.has(f))) for (const f of TABLES[t].families) families.add(f);
  for (const f of families)
    if (!FAMILIES[f].tables.some((t) => tables.has(t))) for (const t of FAMILIES[f].tables) tables.add(t);
  if (tables.size === 0)
    throw new UsageError("-A: no socket table left to show (every one given was taken away with !)");
  return { ...listed(tables, families, mask, named), chosen };
}

/** The library's protocols, families and types for the tables of the families selected. */
function listed(
  tables: ReadonlySet<Table>,
  families: ReadonlySet<Family>,
  states: number,
  named: ReadonlySet<Protocol>,
): Omit<TableSelection, "chosen"> {
  const protocols = new Set<Protocol>();
  for (const t of tables)
    if (TABLES[t].families.some((f) => families.has(f))) protocols.add(TABLES[t].protocol);
  const out: Omit<TableSelection, "chosen"> = { protocols: [...protocols], states, named };
  const inet = INET.filter((f) => families.has(f)) as InetFamily[];
  if (inet.length === 1) out.families = inet;
  const unix = (["stream", "dgram", "seqpacket"] as const).filter((t) => tables.has(`unix_${t}`));
  if (unix.length < 3 && protocols.has("unix")) out.unixTypes = unix;
  const packet = (["raw", "dgram"] as const).filter((t) => tables.has(`packet_${t}`));
  if (packet.length < 2 && protocols.has("packet")) out.packetTypes = packet;
  // ss's vsock_type_skip leaves out only the stream and dgram sockets of a table not selected.
  const vsock = (["stream", "dgram"] as const).filter((t) => tables.has(`vsock_${t}`));
  if (vsock.length < 2 && protocols.has("vsock")) out.vsockTypes = [...vsock, "seqpacket"];
  return out;
}

function tablesNamed(name: string): readonly Table[] {
  if (name === "dccp")
    throw new UsageError("-A dccp: sockdiag does not list DCCP sockets (Linux removed DCCP in 6.16)");
  if (Object.hasOwn(QUERY_NAMES, name)) return QUERY_NAMES[name]!;
  const near = nearest(name, Object.keys(QUERY_NAMES));
  throw new UsageError(
    `-A: "${name}" is not a socket table${near ? `; did you mean "${near}"?` : ""}`,
    `known: ${Object.keys(QUERY_NAMES).join(", ")} (comma-separated; "!NAME" takes one away)`,
  );
}

function familyNamed(name: string): Family {
  if (Object.hasOwn(FAMILY_NAMES, name)) return FAMILY_NAMES[name]!;
  const near = nearest(name, Object.keys(FAMILY_NAMES));
  throw new UsageError(
    `-f: "${name}" is not a socket family${near ? `; did you mean "${near}"?` : ""}`,
    `known: ${Object.keys(FAMILY_NAMES).join(", ")}`,
  );
}

/** The full state mask ss's -a selects, and -l's: LISTEN and CLOSE. */
export const FLAG_STATES = { all: ALL_STATES, listening: (1 << TCP_LISTEN) | CLOSE } as const;
