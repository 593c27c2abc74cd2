/**
 * The agent's command line, as data: one table of options feeds parsing (node:util parseArgs),
 * environment variables (each option has one; a flag given on the command line wins) and --help.
 */
import { isIP } from "node:net";
import { parseArgs } from "node:util";
import type { AgentProtocol } from "./backend.js";
import type { ListenAddress } from "./http-server.js";
import type { TerminatingPolicy } from "./removals.js";

/** Pin directories looked at by default, each where it exists. */
export const DEFAULT_NETNS_DIRS = ["/run/netns", "/var/run/cilium/netns", "/var/run/docker/netns"];
const LOG_LEVELS = ["fatal", "error", "warn", "info", "debug", "trace", "silent"] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/** Everything the command line decides. */
export interface AgentOptions {
  /** Undefined: KUBECONFIG, else the in-cluster service account (see kubeconfig.ts). */
  kubeconfig: string | undefined;
  /** Pin directories named on the command line (each where it exists), or undefined for the defaults. */
  netnsDirs: string[] | undefined;
  discover: boolean;
  listen: ListenAddress;
  stateDir: string;
  protocols: AgentProtocol[];
  onTerminating: TerminatingPolicy;
  coalesceMs: number;
  /** Each watch asks the server to end it after 1 to 2 times this; a silent one is given up after that. */
  watchTimeoutMs: number;
  /** How long after its batch a removed backend is watched over for late sockets and flows; 0: off. */
  aftercareMs: number;
  /** An object (list item or watch event) over this many bytes: the answer is abandoned. */
  maxObjectBytes: number;
  /** A list answer (or a streaming list's initial events) over this many bytes is abandoned. */
  maxListBytes: number;
  conntrack: boolean;
  /** sockdiag's onePass: find the sockets in one BPF pass, enter only the namespaces that need it. */
  onePass: "auto" | "on" | "off";
  dryRun: boolean;
  /** Kubernetes Events on the pods whose sockets were destroyed (they need nodeName). */
  events: boolean;
  /** This node's name (the downward API's spec.nodeName): its Pods are watched, its Events reported by it. */
  nodeName: string | undefined;
  logLevel: LogLevel;
}

/** A bad flag or environment variable; the message names it. Exit status 2. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

interface OptionRow {
  name: string;
  /** The value's placeholder; absent for a switch. */
  value?: string;
  env: string;
  multiple?: boolean;
  help: string;
}

const OPTIONS: readonly OptionRow[] = [
  {
    name: "kubeconfig",
    value: "FILE",
    env: "KUBECONFIG",
    help: "kubeconfig file (default: KUBECONFIG, else the in-cluster service account)",
  },
  {
    name: "netns-dir",
    value: "DIR",
    env: "NETNS_DIRS",
    multiple: true,
    help: `namespace pin directory, repeatable (env: ":"-separated; default: ${DEFAULT_NETNS_DIRS.join(", ")}; each one named is looked at where it exists)`,
  },
  {
    name: "no-discover",
    env: "NO_DISCOVER",
    help: "do not look for unpinned namespaces through /proc/PID/ns/net",
  },
  {
    name: "listen",
    value: "HOST:PORT",
    env: "LISTEN",
    help: "address for /metrics, /healthz, /readyz (default 127.0.0.1:9813)",
  },
  {
    name: "state-dir",
    value: "DIR",
    env: "STATE_DIR",
    help: "where the known backends are saved (default /var/lib/sockdiag-agent)",
  },
  {
    name: "protocols",
    value: "LIST",
    env: "PROTOCOLS",
    help: "endpoint protocols to act on: udp, tcp or udp,tcp (default udp)",
  },
  {
    name: "on-terminating",
    value: "POLICY",
    env: "ON_TERMINATING",
    help: "terminate (default): a terminating backend loses its clients once its Service port has a ready endpoint; keep: once it stops serving",
  },
  {
    name: "coalesce",
    value: "MS",
    env: "COALESCE_MS",
    help: "wait this long for an endpoint to reappear before acting (default 1000)",
  },
  {
    name: "aftercare",
    value: "SECONDS",
    env: "AFTERCARE",
    help: "after a removal, terminate what still appears for the backend this long (default 30; 0: off)",
  },
  {
    name: "watch-timeout",
    value: "SECONDS",
    env: "WATCH_TIMEOUT",
    help: "each watch asks the server to end it after 1-2x this; one silent longer is given up (default 300)",
  },
  {
    name: "max-object-bytes",
    value: "BYTES",
    env: "MAX_OBJECT_BYTES",
    help: "an API answer with an object over this is abandoned and retried (default 4Mi; Ki, Mi, Gi)",
  },
  {
    name: "max-list-bytes",
    value: "BYTES",
    env: "MAX_LIST_BYTES",
    help: "a list answer over this is abandoned and retried (default 1Gi: 100,000 Services of 10 endpoints fit)",
  },
  {
    name: "no-conntrack",
    env: "NO_CONNTRACK",
    help: "do not delete the removed backends' UDP conntrack entries",
  },
  {
    name: "one-pass",
    value: "MODE",
    env: "ONE_PASS",
    help: "auto: find the sockets in one BPF pass over every task's files where it can run and pays, and enter only the namespaces that need it; on: wherever it can run (a batch fails where it cannot); off: walk every namespace. Default auto",
  },
  { name: "dry-run", env: "DRY_RUN", help: "count what would be destroyed, destroy nothing" },
  {
    name: "node-name",
    value: "NAME",
    env: "NODE_NAME",
    help: "this node's name: its Pods are watched to name them in Events (none without it)",
  },
  {
    name: "no-events",
    env: "NO_EVENTS",
    help: "post no Kubernetes Events on the pods whose sockets were destroyed",
  },
  {
    name: "log-level",
    value: "LEVEL",
    env: "LOG_LEVEL",
    help: `${LOG_LEVELS.join(", ")} (default info); debug logs every slice change`,
  },
];

const ENV_PREFIX = "SOCKDIAG_AGENT_";

/** The --help text. */
export function helpText(): string {
  const rows = OPTIONS.map((o) => [`--${o.name}${o.value ? ` ${o.value}` : ""}`, o.help, ENV_PREFIX + o.env]);
  const width = Math.max(...rows.map(([flag]) => flag!.length)) + 2;
  const lines = [
    "Usage: sockdiag-agent [OPTIONS]",
    "",
    "Watches Kubernetes EndpointSlices and, when a backend leaves its Service (or terminates while the",
    "Service has a ready endpoint), destroys the sockets still connected to it and deletes its UDP",
    "conntrack entries, in the host and in every network namespace of this node.",
    "",
    "Options (each also set by the environment variable below it; a flag wins):",
  ];
  for (const [flag, help, env] of rows)
    lines.push(`  ${flag!.padEnd(width)}${help}`, `  ${"".padEnd(width)}env ${env}`);
  lines.push("  --help", "  --version");
  return `${lines.join("\n")}\n`;
}

/** What the command line asks for: run, or print help or the version. */
export type Command = { run: AgentOptions } | { help: true } | { version: true };

/** Parse argv (without node and script) and the environment; throws UsageError naming the culprit. */
export function parseOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): Command {
  const spec: Record<string, { type: "string" | "boolean"; multiple?: boolean }> = {
    help: { type: "boolean" },
    version: { type: "boolean" },
  };
  for (const o of OPTIONS)
    spec[o.name] = { type: o.value ? "string" : "boolean", ...(o.multiple ? { multiple: true } : {}) };
  let values: Record<string, string | boolean | string[] | undefined>;
  try {
    values = parseArgs({ args: [...argv], options: spec, strict: true, allowPositionals: false })
      .values as typeof values;
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split(". ")[0]}; see --help`);
  }
  if (values.help) return { help: true };
  if (values.version) return { version: true };
  const raw = (name: string): { text: string | string[]; from: string } | undefined => {
    const row = OPTIONS.find((o) => o.name === name)!;
    const flag = values[name];
    if (flag !== undefined && flag !== false)
      return { text: flag === true ? "true" : flag, from: `--${name}` };
    const fromEnv = env[ENV_PREFIX + row.env];
    if (fromEnv === undefined || fromEnv === "") return undefined;
    return { text: row.multiple ? fromEnv.split(":").filter(Boolean) : fromEnv, from: ENV_PREFIX + row.env };
  };
  const text = (name: string) => {
    const r = raw(name);
    return r === undefined ? undefined : { text: String(r.text), from: r.from };
  };
  const flag = (name: string): boolean => {
    const r = text(name);
    if (r === undefined) return false;
    if (/^(1|true|yes)$/i.test(r.text)) return true;
    if (/^(0|false|no)$/i.test(r.text)) return false;
    throw new UsageError(`${r.from}: expected true or false, got ${JSON.stringify(r.text)}`);
  };
  const dirs = raw("netns-dir");
  return {
    run: {
      kubeconfig: text("kubeconfig")?.text,
      netnsDirs: dirs === undefined ? undefined : ([] as string[]).concat(dirs.text),
      discover: !flag("no-discover"),
      listen: parseListen(text("listen") ?? { text: "127.0.0.1:9813", from: "--listen" }),
      stateDir: text("state-dir")?.text ?? "/var/lib/sockdiag-agent",
      protocols: parseProtocols(text("protocols") ?? { text: "udp", from: "--protocols" }),
      onTerminating: oneOf(text("on-terminating"), ["terminate", "keep"] as const, "terminate"),
      coalesceMs: parseCoalesce(text("coalesce")),
      aftercareMs: seconds(text("aftercare"), 30, 0, 3600),
      watchTimeoutMs: seconds(text("watch-timeout"), 300, 1, 86_400),
      maxObjectBytes: bytes(text("max-object-bytes"), 4 * MI),
      maxListBytes: bytes(text("max-list-bytes"), 1024 * MI),
      conntrack: !flag("no-conntrack"),
      onePass: oneOf(text("one-pass"), ["auto", "on", "off"] as const, "auto"),
      dryRun: flag("dry-run"),
      events: !flag("no-events"),
      nodeName: parseNodeName(text("node-name")),
      logLevel: oneOf(text("log-level"), LOG_LEVELS, "info"),
    },
  };
}

function parseListen({ text, from }: { text: string; from: string }): ListenAddress {
  const m = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/.exec(text);
  const host = m?.[1] ?? m?.[2];
  const port = Number(m?.[3]);
  if (!m || host === undefined || port > 65535)
    throw new UsageError(`${from}: expected HOST:PORT, got ${JSON.stringify(text)}`);
  // Brackets may hold an IPv4 address too: "[$(HOST_IP)]:9813" then serves IPv4 and IPv6 nodes alike.
  if (m[1] !== undefined && isIP(host) === 0)
    throw new UsageError(`${from}: ${JSON.stringify(host)} is not an IP address`);
  return { host, port };
}

/** A node's name: a DNS subdomain (the API's rule for object names). */
function parseNodeName(r: { text: string; from: string } | undefined): string | undefined {
  if (r === undefined) return undefined;
  if (r.text.length > 253 || !/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(r.text))
    throw new UsageError(
      `${r.from}: expected a node's name (a DNS subdomain), got ${JSON.stringify(r.text)}`,
    );
  return r.text;
}

function parseProtocols({ text, from }: { text: string; from: string }): AgentProtocol[] {
  const out: AgentProtocol[] = [];
  for (const word of text.split(",")) {
    const p = word.trim().toLowerCase();
    if (p !== "udp" && p !== "tcp")
      throw new UsageError(`${from}: unknown protocol ${JSON.stringify(word)} (udp, tcp)`);
    if (!out.includes(p)) out.push(p);
  }
  return out;
}

function parseCoalesce(r: { text: string; from: string } | undefined): number {
  if (r === undefined) return 1000;
  const ms = Number(r.text);
  if (!/^\d+$/.test(r.text) || ms > 3_600_000)
    throw new UsageError(`${r.from}: expected milliseconds (0-3600000), got ${JSON.stringify(r.text)}`);
  return ms;
}

/** Whole seconds in [min, max], as milliseconds; `fallback` seconds when not given. */
function seconds(
  r: { text: string; from: string } | undefined,
  fallback: number,
  min: number,
  max: number,
): number {
  if (r === undefined) return fallback * 1000;
  const n = Number(r.text);
  if (!/^\d+$/.test(r.text) || n < min || n > max)
    throw new UsageError(`${r.from}: expected seconds (${min}-${max}), got ${JSON.stringify(r.text)}`);
  return n * 1000;
}

const MI = 1024 * 1024;
const UNITS: Record<string, number> = { "": 1, Ki: 1024, Mi: MI, Gi: 1024 * MI };

/** A byte count with an optional binary suffix (Ki, Mi, Gi), at least 1 Ki. */
function bytes(r: { text: string; from: string } | undefined, fallback: number): number {
  if (r === undefined) return fallback;
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(r.text);
  const n = m ? Number(m[1]) * UNITS[m[2] ?? ""]! : Number.NaN;
  if (!(n >= 1024 && n <= Number.MAX_SAFE_INTEGER))
    throw new UsageError(
      `${r.from}: expected bytes (at least 1Ki; Ki, Mi, Gi), got ${JSON.stringify(r.text)}`,
    );
  return n;
}

function oneOf<T extends string>(
  r: { text: string; from: string } | undefined,
  allowed: readonly T[],
  fallback: T,
): T {
  if (r === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(r.text))
    throw new UsageError(`${r.from}: expected ${allowed.join(", ")}, got ${JSON.stringify(r.text)}`);
  return r.text as T;
}
