/**
 * `sockdiag conntrack ls|rm [SELECT]`: list connection-tracking entries like `conntrack -L`, or
 * delete them like `conntrack -D` — exactly, in batches, in any namespace, refusing an empty
 * selection unless told --all.
 */

import {
  type ConntrackDeleteReport,
  type ConntrackQuery,
  type ConntrackTupleSelection,
  deleteConntrack,
  iterateConntrack,
} from "../../conntrack/index.js";
import { ambiguousPort, noPeerAddress } from "../../diag/address.js";
import { AbortError, EmptySelectionError } from "../../run/index.js";
import { ConntrackOutput } from "../conntrack-output.js";
import { escapeText } from "../escape.js";
import { type CommandSpec, type ParsedValues, parseCommand } from "../options.js";
import { namespacesJson, reportNamespaces } from "../report.js";
import { NETNS_DIR_OPTION, NETNS_OPTIONS, NO_DISCOVER_OPTION, namespaceFromArgs } from "../select.js";
import { OutputError } from "../stdout.js";
import { EXIT_FAILED, EXIT_OK, UsageError } from "../usage.js";
import type { Command } from "./index.js";

export const CONNTRACK: CommandSpec = {
  name: "conntrack",
  usage:
    "ls|rm [-p PROTO] [-4|-6] [--orig-src A[:PORT]] [--orig-dst A[:PORT]] [--reply-src A[:PORT]] [--reply-dst A[:PORT]] [--zone N] [--mark N[/MASK]] [-N NAME | --all-netns] [-j|--ndjson] [--dry-run] [--all]",
  summary:
    "List (ls) or delete (rm) connection-tracking entries, in this namespace or others. ls prints them as conntrack -L does; rm deletes each one exactly (its tuple and id) and prints what it deleted, the report on stderr.",
  options: [
    {
      name: "proto",
      short: "p",
      value: "PROTO",
      help: "udp, tcp, icmp, icmpv6, sctp, dccp, udplite, gre, or a number",
    },
    { name: "ipv4", short: "4", help: "IPv4 entries only" },
    { name: "ipv6", short: "6", help: "IPv6 entries only" },
    { name: "orig-src", value: "A[:PORT]", help: "original source address (and port)" },
    { name: "orig-dst", value: "A[:PORT]", help: "original destination address (and port)" },
    { name: "reply-src", value: "A[:PORT]", help: "reply source (and port): the backend of a DNATed flow" },
    { name: "reply-dst", value: "A[:PORT]", help: "reply destination (and port)" },
    { name: "zone", value: "N", help: "conntrack zone" },
    { name: "mark", value: "N[/MASK]", help: "mark (decimal or 0x hex), optionally under a mask" },
    ...NETNS_OPTIONS,
    { name: "all-netns", help: "this namespace and every pinned or discovered one (adds a netns column)" },
    NETNS_DIR_OPTION,
    NO_DISCOVER_OPTION,
    { name: "json", short: "j", help: "print one JSON array (rm: entries and report)" },
    { name: "ndjson", help: "print one JSON object per line" },
    { name: "dry-run", help: "rm: list what would be deleted, delete nothing" },
    { name: "all", help: "rm: allow a selection without address, port, zone or mark" },
  ],
  details: [
    "IPv6 addresses with a port go in brackets: [fd00::5]:53. Addresses are exact (no prefixes).",
    "A namespace without conntrack is a note on stderr, not an error.",
    "Exit status: 0 success, 1 a delete or a namespace failed, 2 bad input.",
  ].join("\n"),
};

export function runConntrack(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(CONNTRACK, argv);
  const [sub, ...extra] = positionals;
  if (sub !== "ls" && sub !== "rm")
    throw new UsageError(
      sub === undefined ? "conntrack needs ls or rm" : `unknown conntrack command "${sub}"`,
      "run 'sockdiag conntrack --help'",
    );
  if (extra.length > 0) throw new UsageError(`conntrack ${sub}: unexpected "${extra[0]}"`);
  if (sub === "ls")
    for (const k of ["dry-run", "all"]) if (values[k]) throw new UsageError(`--${k} goes with conntrack rm`);
  const query = queryFromArgs(values, sub === "rm");
  return sub === "ls" ? list(query, values) : remove(query, values);
}

function list(query: ConntrackQuery, values: ParsedValues): number {
  const it = iterateConntrack(query);
  const output = new ConntrackOutput(values, query.netns === "all");
  for (const e of it) output.add(e);
  output.end();
  reportNamespaces(it.failures, it.notes);
  return it.failures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

function remove(query: ConntrackQuery, values: ParsedValues): number {
  const dryRun = Boolean(values["dry-run"]);
  const output = new ConntrackOutput(values, query.netns === "all", '{"entries":[');
  let report: ConntrackDeleteReport;
  // Nobody reads what was deleted any more: stop deleting, as kill does when its pipe closes.
  const stop = new AbortController();
  let broken: OutputError | undefined;
  try {
    report = deleteConntrack({
      ...query,
      dryRun,
      all: Boolean(values.all),
      signal: stop.signal,
      onOutcome: (e, outcome) => {
        if (broken || (outcome !== "deleted" && outcome !== "wouldDelete")) return;
        try {
          output.add(e);
        } catch (err) {
          if (!(err instanceof OutputError)) throw err;
          broken = err;
          stop.abort(err);
        }
      },
    });
  } catch (err) {
    if (err instanceof AbortError && broken) throw broken;
    if (err instanceof EmptySelectionError)
      throw new UsageError(
        "refusing to delete every selected conntrack entry without an address, port, zone or mark",
        "narrow the selection (--mark 0/0 selects every entry), or give --all to mean it",
      );
    throw err;
  }
  if (values.json) output.end(`],"report":${JSON.stringify(reportJson(report))}}`);
  else {
    output.end();
    process.stderr.write(formatReport(report));
  }
  reportNamespaces(report.namespaceFailures, report.notes);
  return report.failed.length > 0 || report.namespaceFailures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

function reportJson(r: ConntrackDeleteReport): Record<string, unknown> {
  return { ...r, ...namespacesJson(r.namespaceFailures, r.notes) };
}

function formatReport(r: ConntrackDeleteReport): string {
  const lines = [
    r.dryRun
      ? `${r.matched} conntrack entries matched, ${r.wouldDelete} would be deleted (dry run)`
      : `${r.matched} matched, ${r.deleted} deleted, ${r.gone} already gone, ${r.failed.length} failed${r.skipped ? `, ${r.skipped} not attempted` : ""}`,
  ];
  if (r.namespaces.length > 1)
    for (const n of r.namespaces)
      lines.push(
        `  ${escapeText(n.netns).padEnd(24)} matched ${n.matched}  ${r.dryRun ? `would delete ${n.wouldDelete}` : `deleted ${n.deleted}`}  gone ${n.gone}  failed ${n.failed.length}`,
      );
  for (const f of r.failed.slice(0, 20))
    lines.push(
      `  failed: ${f.entry.protocol} ${f.entry.original.src} -> ${f.entry.original.dst}${f.entry.netns ? ` [netns ${f.entry.netns}]` : ""}: ${f.code}: ${f.message}`,
    );
  return `${lines.join("\n")}\n`;
}

/**
 * The selection flags as a conntrack query; a bad address or number is a usage error naming the
 * flag. For `rm` (`deleting`), an unspecified or broadcast address is one too: only a typo.
 */
function queryFromArgs(values: ParsedValues, deleting: boolean): ConntrackQuery {
  const query: ConntrackQuery = { ...namespaceFromArgs(values) };
  if (values.ipv4 && values.ipv6) throw new UsageError("choose one of -4, -6");
  if (values.ipv4) query.family = "inet";
  if (values.ipv6) query.family = "inet6";
  if (typeof values.proto === "string")
    query.protocol = /^\d+$/.test(values.proto) ? Number(values.proto) : values.proto;
  const original: ConntrackTupleSelection = {};
  const reply: ConntrackTupleSelection = {};
  endpoint(values, "orig-src", original, "src", "sport", deleting);
  endpoint(values, "orig-dst", original, "dst", "dport", deleting);
  endpoint(values, "reply-src", reply, "src", "sport", deleting);
  endpoint(values, "reply-dst", reply, "dst", "dport", deleting);
  if (Object.keys(original).length > 0) query.original = original;
  if (Object.keys(reply).length > 0) query.reply = reply;
  if (typeof values.zone === "string") query.zone = number(values.zone, "--zone");
  if (typeof values.mark === "string") {
    const [mark, mask] = values.mark.split("/");
    query.mark = number(mark!, "--mark");
    if (mask !== undefined) query.markMask = number(mask, "--mark");
  }
  return query;
}

function number(text: string, flag: string): number {
  const n = /^0x[0-9a-f]+$/i.test(text)
    ? Number.parseInt(text.slice(2), 16)
    : /^\d+$/.test(text)
      ? Number(text)
      : Number.NaN;
  if (!Number.isSafeInteger(n)) throw new UsageError(`${flag}: "${text}" is not a number`);
  return n;
}

/** Read "A", "A:PORT", "[IPv6]:PORT" or a bare IPv6 address into a tuple selection. */
function endpoint(
  values: ParsedValues,
  flag: string,
  into: ConntrackTupleSelection,
  addr: "src" | "dst",
  port: "sport" | "dport",
  deleting: boolean,
): void {
  const text = values[flag];
  if (typeof text !== "string") return;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const v4port = /^([0-9.]+):(\d+)$/.exec(text);
  const m = bracketed ?? v4port;
  const address = m ? m[1]! : text;
  if (address === "") throw new UsageError(`--${flag}: an address is missing in "${text}"`);
  const notPeer = deleting ? noPeerAddress(address) : undefined;
  if (notPeer) throw new UsageError(`--${flag}: "${address}" is ${notPeer}`);
  into[addr] = address;
  const portText = m?.[2];
  if (portText === undefined) return;
  const ambiguous = ambiguousPort(portText);
  if (ambiguous) throw new UsageError(`--${flag}: ${ambiguous}`);
  into[port] = Number(portText);
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: CONNTRACK, run: runConntrack };
