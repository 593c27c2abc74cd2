/**
 * SELECT: the socket selection flags shared by `ls` and `kill`, as ss spells them, and the
 * `state`/`exclude` words and filter words that follow them on the command line.
 */
import { closeSync, existsSync, openSync, readSync } from "node:fs";
import { isInetProtocol } from "../../diag/constants.js";
import type { Extension, Protocol } from "../../diag/socket.js";
import { ALL_STATES } from "../../diag/states.js";
import { DEFAULT_NETNS_DIRS, type NamespaceSelection, validateNetnsName } from "../../netns/index.js";
import { type NamespacedQuery, statesFromWords } from "../../sockets/index.js";
import type { OptionSpec, Parsed, ParsedValues } from "../io/index.js";
import { UsageError } from "../io/index.js";
import { CgroupPaths } from "./cgroup.js";
import { selectTables } from "./tables.js";

/** --netns-dir: where pinned namespaces are looked for (ls/kill --all-netns, terminate-backend, netns ls). */
export const NETNS_DIR_OPTION: OptionSpec = {
  name: "netns-dir",
  value: "DIR",
  multiple: true,
  help: `pin directory to search instead of the defaults (${DEFAULT_NETNS_DIRS.join(", ")}, each where it exists); repeatable`,
};

/** --no-discover: every namespace means the pinned ones only. */
export const NO_DISCOVER_OPTION: OptionSpec = {
  name: "no-discover",
  help: "every namespace means the pinned ones only: none found through /proc/PID/ns/net",
};

/** The namespace options of ls, kill and terminate-backend: -N, --netns, --pid, --all-netns. */
export const NETNS_OPTIONS: readonly OptionSpec[] = [
  { name: "net", short: "N", value: "NAME", help: "in the namespace pinned as NAME (ip netns), as ss -N" },
  { name: "netns", value: "PATH", help: "in the namespace of the file PATH (/proc/PID/ns/net, a pin)" },
  { name: "pid", value: "PID", help: "in the network namespace of process PID" },
];

/** The SELECT flags, the same in every command: -a/--all is every state, as in ss. */
export function selectOptions(): OptionSpec[] {
  return [...SELECT_OPTIONS];
}

const SELECT_OPTIONS: readonly OptionSpec[] = [
  { name: "tcp", short: "t", help: "TCP sockets" },
  { name: "udp", short: "u", help: "UDP sockets" },
  { name: "udplite", help: "UDP-Lite sockets" },
  { name: "raw", short: "w", help: "raw sockets" },
  { name: "unix", short: "x", help: "unix domain sockets" },
  { name: "mptcp", short: "M", help: "MPTCP sockets" },
  { name: "sctp", short: "S", help: "SCTP sockets" },
  { name: "packet", short: "0", help: "packet sockets (AF_PACKET)" },
  { name: "netlink", help: "netlink sockets (as ss -f netlink)" },
  { name: "vsock", help: "vsock sockets (where the kernel lists them)" },
  { name: "tipc", help: "TIPC sockets (where the kernel lists them)" },
  { name: "xdp", help: "XDP sockets (where the kernel lists them)" },
  { name: "ipv4", short: "4", help: "IPv4 sockets only" },
  { name: "ipv6", short: "6", help: "IPv6 sockets only" },
  {
    name: "family",
    short: "f",
    value: "FAMILY",
    multiple: true,
    help: "sockets of FAMILY, as ss -f: inet, inet6, link, unix, netlink, vsock, tipc, xdp",
  },
  {
    name: "query",
    short: "A",
    value: "QUERY",
    multiple: true,
    help: "socket tables, as ss -A: all, inet, tcp, udp, unix_dgram, packet_raw, netlink, ... (comma-separated)",
  },
  { name: "socket", value: "QUERY", multiple: true, help: "the same as -A/--query, as ss --socket" },
  { name: "all", short: "a", help: "sockets in every state (default: connected only, as ss)" },
  { name: "listening", short: "l", help: "listening and unconnected sockets only" },
  { name: "options", short: "o", help: "show timers: timer:(name,expires,retransmits), as ss -o" },
  { name: "extended", short: "e", help: "show uid, inode and cookie" },
  { name: "memory", short: "m", help: "show socket memory (skmem)" },
  { name: "info", short: "i", help: "show TCP info and congestion control" },
  { name: "processes", short: "p", help: "show the processes holding each socket" },
  { name: "threads", short: "T", help: "show the threads holding each socket (users: with tid=), as ss -T" },
  { name: "cgroup", help: "show the cgroup of each socket (cgroup:PATH, as ss --cgroup)" },
  { name: "tipcinfo", help: "show a TIPC socket's type, congestion, drops, publication and service, as ss" },
  { name: "oneline", short: "O", help: "print -m and -i details on the socket's line, not on a second one" },
  { name: "numeric", short: "n", help: "accepted for ss compatibility: output is always numeric" },
  {
    name: "resolve",
    short: "r",
    help: "refused: output is numeric only",
    refused: () => "output is numeric only: resolving names would send a DNS query for each address",
  },
  { name: "context", short: "Z", help: "refused: no SELinux contexts", refused: selinuxRefusal },
  { name: "contexts", short: "z", help: "refused: no SELinux contexts", refused: selinuxRefusal },
  { name: "filter", short: "F", value: "FILE", help: "read the filter from FILE ('-' for stdin)" },
  ...NETNS_OPTIONS,
  { name: "all-netns", help: "in this namespace and every pinned or discovered one (adds a netns column)" },
  NETNS_DIR_OPTION,
  NO_DISCOVER_OPTION,
];

/** ss -Z/-z show SELinux contexts (misc/ss.c refuses them too when SELinux is off). */
function selinuxRefusal(): string {
  return existsSync("/sys/fs/selinux")
    ? "sockdiag does not read SELinux security contexts"
    : "this kernel has no SELinux security contexts to show";
}

/** What to show beyond the basic columns. */
export interface Display {
  /** -o: timers. */
  options: boolean;
  extended: boolean;
  memory: boolean;
  info: boolean;
  /** -p (also -T). */
  processes: boolean;
  /** -T: one owner per thread, with its tid. */
  threads?: boolean;
  /** --cgroup (also shown by -e, as ss). */
  cgroup?: boolean;
  /** -O: -m and -i details on the socket's line, not on a second line. */
  oneline?: boolean;
  /** --tipcinfo: ss's line of TIPC details. */
  tipcinfo?: boolean;
}

export interface Selection {
  query: NamespacedQuery;
  /** The filter expression, as the words given (or the text of -F FILE); empty when none. */
  filter: string;
  display: Display;
  /** The protocols named one by one (else protocols the kernel lacks are skipped). */
  named: ReadonlySet<Protocol>;
  /** Whether a table or family flag was given (ss: not do_default). */
  explicitTables: boolean;
  /** Whether the states were chosen (state/exclude words, -a, -l) rather than defaulted. */
  explicitStates: boolean;
}

/**
 * Build the selection from parsed flags and the positional words: leading `state WORD` /
 * `exclude WORD` pairs (as ss accepts them), then the filter. `defaults` are the -A names
 * selected when no table or family flag is given.
 */
export function selectionFromArgs(
  { values, positionals, order }: Parsed,
  defaults: { tables: readonly string[] },
): Selection {
  // ss (misc/ss.c main): -a and -l set the states, the last one given wins; then the words, in
  // order: the first `state` starts from none, the first `exclude` from every state (whatever -a
  // or -l said). What an empty result means is the tables' business (tables.ts).
  let sawStates = false;
  let i = 0;
  const words: [string, string][] = [];
  while (
    i < positionals.length &&
    (positionals[i] === "state" || positionals[i] === "exclude" || positionals[i] === "excl")
  ) {
    const word = positionals[i + 1];
    if (word === undefined) throw new UsageError(`"${positionals[i]}" needs a state name after it`);
    words.push([positionals[i]!, word]);
    i += 2;
  }
  const applyWords = (flagStates: number) => {
    let states = flagStates;
    for (const [kind, word] of words) {
      const bits = statesFromWords([word], kind === "state" ? "state" : "exclude");
      if (kind === "state") states = (sawStates ? states : 0) | bits;
      else states = (sawStates ? states : ALL_STATES) & ~bits;
      sawStates = true;
    }
    return states;
  };
  const tables = selectTables(
    order.map((o) => (o === "socket" ? "query" : o)),
    { query: queryValues(order, values), family: values.family as string[] | undefined },
    defaults.tables,
    applyWords,
  );
  let filterWords = positionals.slice(i);
  if (typeof values.filter === "string") {
    if (filterWords.length > 0)
      throw new UsageError("give the filter either with -F FILE or as words, not both");
    filterWords = [readFilterFile(values.filter)];
  }

  const query: NamespacedQuery = { protocols: tables.protocols, ...namespaceFromArgs(values) };
  if (tables.families) query.families = tables.families;
  if (tables.unixTypes) query.unixTypes = tables.unixTypes;
  if (tables.packetTypes) query.packetTypes = tables.packetTypes;
  if (tables.vsockTypes) query.vsockTypes = tables.vsockTypes;
  query.states = tables.states;
  if (filterWords.some((w) => w.trim() !== "")) {
    // A filter is about addresses and ports: the families without them are left out, unless named.
    const without = tables.protocols.filter((p) => !isInetProtocol(p));
    const named = without.find((p) => tables.named.has(p));
    if (named) throw new UsageError(`a FILTER applies to IP sockets only: it cannot select ${named} sockets`);
    query.protocols = tables.protocols.filter(isInetProtocol);
    if (query.protocols.length === 0)
      throw new UsageError("a FILTER applies to IP sockets only, and no IP socket table is selected");
    query.filter = filterWords;
  }

  const display: Display = {
    options: Boolean(values.options),
    extended: Boolean(values.extended),
    memory: Boolean(values.memory),
    info: Boolean(values.info),
    processes: Boolean(values.processes || values.threads),
    threads: Boolean(values.threads),
    cgroup: Boolean(values.cgroup),
    oneline: Boolean(values.oneline),
    tipcinfo: Boolean(values.tipcinfo),
  };
  const extensions: Extension[] = [];
  if (display.memory) extensions.push("skmem");
  if (display.info) extensions.push("tcpinfo", "cong");
  if (extensions.length > 0) query.extensions = extensions;
  const explicitStates = sawStates || Boolean(values.all || values.listening);
  return {
    query,
    filter: filterWords.join(" ").trim(),
    display,
    named: tables.named,
    explicitTables: tables.chosen,
    explicitStates,
  };
}

/** The -A/--query and --socket values (ss: two spellings of one option), in the order given. */
function queryValues(order: readonly string[], values: ParsedValues): string[] {
  const given = {
    query: (values.query as string[] | undefined) ?? [],
    socket: (values.socket as string[] | undefined) ?? [],
  };
  const next = { query: 0, socket: 0 };
  const out: string[] = [];
  for (const o of order) if (o === "query" || o === "socket") out.push(given[o][next[o]++]!);
  return out;
}

/**
 * The cgroup names a table shows (--cgroup; -e too, as ss), and the query asks for the attribute
 * that carries the id. JSON has `cgroupId` with --cgroup.
 */
export function cgroupsFor(selection: Selection, table: boolean): CgroupPaths | undefined {
  const d = selection.display;
  if (!d.cgroup && !(d.extended && table)) return undefined;
  selection.query.attributes = true;
  return new CgroupPaths();
}

/** The largest filter file -F reads: far more than any filter, and a bound on a runaway input. */
export const MAX_FILTER_FILE_BYTES = 1 << 20;

/**
 * Read -F FILE ("-": stdin), at most MAX_FILTER_FILE_BYTES: a larger input (/dev/zero, a log
 * given by mistake) is a usage error after reading one byte past the cap, never a hang.
 */
function readFilterFile(path: string): string {
  const buf = Buffer.alloc(MAX_FILTER_FILE_BYTES + 1);
  let fd: number | undefined;
  try {
    fd = path === "-" ? 0 : openSync(path, "r");
    let length = 0;
    for (;;) {
      let n: number;
      try {
        n = readSync(fd, buf, length, buf.length - length, null);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== "EAGAIN") throw err;
        Atomics.wait(pause, 0, 0, 1);
        continue;
      }
      if (n === 0) break;
      length += n;
      if (length > MAX_FILTER_FILE_BYTES)
        throw new UsageError(
          `filter file "${path}" is larger than ${MAX_FILTER_FILE_BYTES} bytes`,
          "a filter file holds one ss filter expression",
        );
    }
    return buf.toString("utf8", 0, length);
  } catch (err) {
    if (err instanceof UsageError) throw err;
    throw new UsageError(`cannot read filter file "${path}": ${(err as Error).message}`);
  } finally {
    if (fd !== undefined && fd !== 0) closeSync(fd);
  }
}

const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * -N / --netns / --pid / --all-netns (and terminate-backend's --host-only): at most one of them.
 * --netns-dir and --no-discover go with every namespace: --all-netns, or no namespace option where
 * that is the default (`everyByDefault`, as terminate-backend).
 */
export function namespaceFromArgs(values: ParsedValues, everyByDefault = false): NamespaceSelection {
  const given = (["net", "netns", "pid", "all-netns", "host-only"] as const).filter(
    (k) => values[k] !== undefined,
  );
  if (given.length > 1) throw new UsageError(`choose one of ${given.map((k) => `--${k}`).join(", ")}`);
  const every = values["all-netns"] === true || (everyByDefault && given.length === 0);
  const dirs = values["netns-dir"] as string[] | undefined;
  const noDiscover = values["no-discover"] === true;
  if ((dirs || noDiscover) && !every)
    throw new UsageError(
      `${dirs ? "--netns-dir" : "--no-discover"} goes with --all-netns${everyByDefault ? " or no namespace option" : ""}`,
    );
  if (every)
    return { netns: "all", ...(dirs ? { netnsDirs: dirs } : {}), ...(noDiscover ? { discover: false } : {}) };
  if (typeof values.net === "string") {
    try {
      validateNetnsName(values.net);
    } catch (err) {
      // Name the flag: a name decoded lossily from argv reads as another one in the message.
      throw new UsageError(
        `-N/--net: ${(err as Error).message}`,
        "give the name of a namespace pinned by ip netns",
      );
    }
    return { netns: values.net };
  }
  if (typeof values.netns === "string")
    return { netns: values.netns.includes("/") ? values.netns : `./${values.netns}` };
  if (typeof values.pid === "string") {
    if (!/^[1-9][0-9]*$/.test(values.pid))
      throw new UsageError(`--pid takes a process id, not "${values.pid}"`);
    if (!existsSync(`/proc/${values.pid}`)) throw new UsageError(`--pid ${values.pid}: no such process`);
    return { netns: `/proc/${values.pid}/ns/net` };
  }
  return {};
}
