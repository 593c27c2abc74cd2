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
import { ambiguousPort } from "../../diag/address.js";
import { AbortError, EmptySelectionError } from "../../run/index.js";
import {
  type CommandSpec,
  EXIT_FAILED,
  EXIT_OK,
  OutputError,
  type ParsedValues,
  parseCommand,
  UsageError,
} from "../io/index.js";
import { ConntrackOutput, namespacesJson, reportNamespaces } from "../output/index.js";
import { escapeText } from "../render/index.js";
import { NETNS_DIR_OPTION, NETNS_OPTIONS, NO_DISCOVER_OPTION, namespaceFromArgs } from "../select/index.js";
import type { Command } from "./index.js";

export const CONNTRACK: CommandSpec = {
  name: "conntrack",
  usage:
    "ls|rm (or -L|-D) [-p PROTO] [-4|-6|-f ipv4|ipv6] [-s A[:PORT]] [-d A[:PORT]] [-r A[:PORT]] [-q A[:PORT]] [--sport P] [--dport P] [--reply-port-src P] [--reply-port-dst P] [-w N] [-m N[/MASK]] [-N NAME | --all-netns] [-j|--ndjson] [--dry-run] [--all]",
  summary:
    "List (ls, -L) or delete (rm, -D) connection-tracking entries, in this namespace or others. ls prints them as conntrack -L does; rm deletes each one exactly (its tuple and id) and prints what it deleted, the report on stderr.",
  options: [
    { name: "dump", short: "L", help: "list, as conntrack -L: the same as ls" },
    { name: "delete", short: "D", help: "delete, as conntrack -D: the same as rm" },
    {
      name: "proto",
      short: "p",
      value: "PROTO",
      help: "udp, tcp, icmp, icmpv6, sctp, dccp, udplite, gre, or a number",
    },
    { name: "ipv4", short: "4", help: "IPv4 entries only" },
    { name: "ipv6", short: "6", help: "IPv6 entries only" },
    { name: "family", short: "f", value: "ipv4|ipv6", help: "IPv4 or IPv6 entries only, as conntrack -f" },
    { name: "orig-src", short: "s", value: "A[:PORT]", help: "original source address (and port)" },
    { name: "src", value: "A[:PORT]", help: "the same as --orig-src, as conntrack spells it" },
    { name: "orig-dst", short: "d", value: "A[:PORT]", help: "original destination address (and port)" },
    { name: "dst", value: "A[:PORT]", help: "the same as --orig-dst, as conntrack spells it" },
    {
      name: "reply-src",
      short: "r",
      value: "A[:PORT]",
      help: "reply source (and port): the backend of a DNATed flow",
    },
    { name: "reply-dst", short: "q", value: "A[:PORT]", help: "reply destination (and port)" },
    { name: "sport", value: "PORT", help: "original source port (any protocol with ports unless -p)" },
    { name: "orig-port-src", value: "PORT", help: "the same as --sport, as conntrack spells it" },
    { name: "dport", value: "PORT", help: "original destination port (any protocol with ports unless -p)" },
    { name: "orig-port-dst", value: "PORT", help: "the same as --dport, as conntrack spells it" },
    { name: "reply-port-src", value: "PORT", help: "reply source port" },
    { name: "reply-port-dst", value: "PORT", help: "reply destination port" },
    { name: "zone", short: "w", value: "N", help: "conntrack zone" },
    {
      name: "mark",
      short: "m",
      value: "N[/MASK]",
      help: "mark (decimal or 0x hex), optionally under a mask",
    },
    ...NETNS_OPTIONS,
    { name: "all-netns", help: "this namespace and every pinned or discovered one (adds a netns column)" },
    NETNS_DIR_OPTION,
    NO_DISCOVER_OPTION,
    { name: "json", short: "j", help: "print one JSON array (rm: entries and report); not conntrack's -j" },
    { name: "ndjson", help: "print one JSON object per line" },
    { name: "dry-run", help: "rm: list what would be deleted, delete nothing" },
    { name: "all", help: "rm: allow a selection without address, port, zone or mark" },
  ],
  details: [
    "IPv6 addresses with a port go in brackets: [fd00::5]:53; a port alone is :53. Addresses are exact (no prefixes).",
    "conntrack(8)'s spellings are taken where they mean the same. Where conntrack differs, sockdiag keeps its own:",
    "-j is JSON (conntrack's -j is --any-nat); without -f both families are listed (conntrack: IPv4 only);",
    "a port without -p selects that port in every protocol with ports (conntrack requires -p).",
    "A namespace without conntrack is a note on stderr, not an error.",
    "Exit status: 0 success, 1 a delete or a namespace failed, 2 bad input.",
  ].join("\n"),
};

export function runConntrack(argv: readonly string[]): number {
  const { values, positionals } = parseCommand(CONNTRACK, argv);
  if (values.dump && values.delete) throw new UsageError("choose one of -L, -D");
  const flagged = values.dump ? "ls" : values.delete ? "rm" : undefined;
  const [sub, ...extra] = flagged && positionals[0] !== flagged ? [flagged, ...positionals] : positionals;
  if (sub !== "ls" && sub !== "rm")
    throw new UsageError(
      sub === undefined ? "conntrack needs ls or rm" : `unknown conntrack command "${sub}"`,
      "run 'sockdiag conntrack --help'",
    );
  if (extra.length > 0) throw new UsageError(`conntrack ${sub}: unexpected "${extra[0]}"`);
  if (sub === "ls")
    for (const k of ["dry-run", "all"]) if (values[k]) throw new UsageError(`--${k} goes with conntrack rm`);
  const query = queryFromArgs(values);
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
        "add an address (-s, -d, -r, -q), a port (--sport, --dport, --reply-port-src, --reply-port-dst), -w ZONE or -m MARK; or give --all to delete them all",
      );
    throw err;
  }
  if (values.json) output.end(`],"report":${JSON.stringify(reportJson(report))}}`);
  else {
    output.end();
    process.stderr.write(formatReport(report));
  }
  reportNamespaces(report.failures, report.notes);
  return report.failed.length > 0 || report.failures.length > 0 ? EXIT_FAILED : EXIT_OK;
}

function reportJson(r: ConntrackDeleteReport): Record<string, unknown> {
  return { ...r, ...namespacesJson(r.failures, r.notes) };
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
 * flag. The unspecified and broadcast addresses are selections like any other here: real entries
 * carry them (a DHCP client's 0.0.0.0:68 -> 255.255.255.255:67).
 */
function queryFromArgs(values: ParsedValues): ConntrackQuery {
  const query: ConntrackQuery = { ...namespaceFromArgs(values) };
  const families = [
    values.ipv4 && "inet",
    values.ipv6 && "inet6",
    typeof values.family === "string" && familyOf(values.family),
  ].filter(Boolean);
  if (new Set(families).size > 1) throw new UsageError("choose one family: -4, -6 or -f");
  if (families[0]) query.family = families[0] as "inet" | "inet6";
  if (typeof values.proto === "string")
    query.protocol = /^\d+$/.test(values.proto) ? Number(values.proto) : values.proto;
  const original: ConntrackTupleSelection = {};
  const reply: ConntrackTupleSelection = {};
  endpoint(alias(values, "orig-src", "src"), original, "src", "sport");
  endpoint(alias(values, "orig-dst", "dst"), original, "dst", "dport");
  endpoint(alias(values, "reply-src"), reply, "src", "sport");
  endpoint(alias(values, "reply-dst"), reply, "dst", "dport");
  portOption(alias(values, "sport", "orig-port-src"), original, "sport");
  portOption(alias(values, "dport", "orig-port-dst"), original, "dport");
  portOption(alias(values, "reply-port-src"), reply, "sport");
  portOption(alias(values, "reply-port-dst"), reply, "dport");
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

/** An option given under one of its spellings: its name as given and its text (at most one spelling). */
interface Given {
  flag: string;
  text: string | undefined;
}

function alias(values: ParsedValues, ...names: string[]): Given {
  const given = names.filter((n) => typeof values[n] === "string");
  if (given.length > 1) throw new UsageError(`--${given[0]} and --${given[1]} name the same field: give one`);
  const flag = given[0] ?? names[0]!;
  return { flag, text: values[flag] as string | undefined };
}

/** -f as conntrack spells it (ipv4, ipv6), or as ss does (inet, inet6). */
function familyOf(text: string): "inet" | "inet6" {
  if (text === "ipv4" || text === "inet") return "inet";
  if (text === "ipv6" || text === "inet6") return "inet6";
  throw new UsageError(`-f/--family: "${text}" is not ipv4 or ipv6`);
}

/** Read "A", "A:PORT", "[IPv6]:PORT", ":PORT" or a bare IPv6 address into a tuple selection. */
function endpoint(
  { flag, text }: Given,
  into: ConntrackTupleSelection,
  addr: "src" | "dst",
  port: "sport" | "dport",
): void {
  if (text === undefined) return;
  const bracketed = /^\[([^\]]+)\](?::(\d+))?$/.exec(text);
  const v4port = /^([0-9.]*):(\d+)$/.exec(text);
  const m = bracketed ?? v4port;
  const address = m ? m[1]! : text;
  if (address === "" && !v4port) throw new UsageError(`--${flag}: an address is missing in "${text}"`);
  if (address !== "") into[addr] = address;
  const portText = m?.[2];
  if (portText !== undefined) setPort({ flag, text: portText }, into, port);
}

/** --sport, --dport and the reply ports: a port alone. */
function portOption(given: Given, into: ConntrackTupleSelection, port: "sport" | "dport"): void {
  if (given.text === undefined) return;
  if (!/^\d+$/.test(given.text)) throw new UsageError(`--${given.flag}: "${given.text}" is not a port`);
  setPort(given, into, port);
}

function setPort({ flag, text }: Given, into: ConntrackTupleSelection, port: "sport" | "dport"): void {
  const ambiguous = ambiguousPort(text!);
  if (ambiguous) throw new UsageError(`--${flag}: ${ambiguous}`);
  if (into[port] !== undefined && into[port] !== Number(text))
    throw new UsageError(`--${flag}: the port is given twice, as ${into[port]} and ${text}`);
  into[port] = Number(text);
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: CONNTRACK, run: runConntrack };
