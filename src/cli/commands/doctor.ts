/** `sockdiag doctor`: what this kernel and these privileges allow, as a checklist. */

import { type ConntrackProbe, probeConntrack } from "../../conntrack/index.js";
import { inNetns, targetLabel, targetsOf, udpHashEntries, type WalkFindings } from "../../netns/index.js";
import { type ProbeItem, probe } from "../../sockets/index.js";
import { asSockdiagError } from "../../sys/errors.js";
import { onePassPath } from "../../terminator/index.js";
import { type CommandSpec, EXIT_FAILED, EXIT_OK, parseCommand, writeOut } from "../io/index.js";
import { reportNamespaces } from "../output/index.js";
import type { Command } from "./index.js";

export const DOCTOR: CommandSpec = {
  name: "doctor",
  usage: "[-j]",
  summary:
    "Check what this kernel and these privileges allow: listing per protocol, destroy, namespaces, conntrack, which namespaces have a UDP table of their own, and which path terminations take (the one pass or a walk of every namespace) and why.",
  options: [{ name: "json", short: "j", help: "print the checks as JSON" }],
};

/** One namespace's UDP table: its own (with its buckets), or the host's, shared. */
interface UdpTable {
  netns: string;
  /** The namespace's udp_hash_entries: negative when it shares the host's table. */
  buckets: number | undefined;
  own: boolean;
}

/** The UDP table of the host and of every pinned or discovered namespace this process can enter. */
function udpTables(): { tables: UdpTable[]; findings: WalkFindings } {
  const findings: WalkFindings = { failures: [], notes: [] };
  const tables: UdpTable[] = [];
  for (const target of targetsOf({ netns: "all" }, findings)) {
    try {
      const buckets = inNetns(target.netns, udpHashEntries);
      tables.push({ netns: targetLabel(target), buckets, own: buckets !== undefined && buckets > 0 });
    } catch (error) {
      findings.failures.push({ netns: targetLabel(target), error: asSockdiagError(error) });
    }
  }
  return { tables, findings };
}

export function runDoctor(argv: readonly string[]): number {
  const { values } = parseCommand(DOCTOR, argv);
  const result = probe();
  const essential = [result.diag.udp, result.diag.tcp, result.destroy];
  const conntrack = probeConntrack();
  const { tables, findings } = udpTables();
  const onePass = onePassPath("auto");
  if (values.json) {
    writeOut(`${JSON.stringify({ ...result, conntrack, namespaceUdpTables: tables, onePass }, null, 2)}\n`);
  } else {
    const line = (label: string, item: ProbeItem) =>
      `  [${item.ok ? "ok" : "--"}] ${label.padEnd(16)}${item.detail}\n`;
    let text = `kernel ${result.kernel}\n\nlisting (sock_diag):\n`;
    for (const [protocol, item] of Object.entries(result.diag)) text += line(protocol, item);
    text += "\ndestroying (SOCK_DESTROY):\n";
    text += line("udp destroy", result.destroy);
    text += "\nprivileges:\n";
    text += line("CAP_NET_ADMIN", result.capabilities.netAdmin);
    text += line("CAP_SYS_ADMIN", result.capabilities.sysAdmin);
    text += "\nnamespaces:\n";
    text += line("enter", result.netns.enter);
    text += line("create", result.netns.create);
    text += conntrackLines(conntrack, line);
    text += "\nUDP tables (a namespace with its own is dumped without walking the others' sockets):\n";
    text += line("new namespaces", result.udpTables);
    for (const t of tables)
      text += line(
        t.netns,
        t.own
          ? { ok: true, detail: `its own (${t.buckets} buckets)` }
          : { ok: false, detail: t.buckets === undefined ? "not known (kernel)" : "shares the host's" },
      );
    text += "\nterminations (--one-pass auto):\n";
    text += line(
      "one pass",
      onePass.used
        ? { ok: true, detail: onePass.message }
        : { ok: false, detail: `walks every namespace (${onePass.reason}): ${onePass.message}` },
    );
    writeOut(text);
  }
  reportNamespaces(findings.failures, findings.notes);
  return essential.every((i) => i.ok) ? EXIT_OK : EXIT_FAILED;
}

/** The conntrack section: what terminate-backend's deletes of conntrack entries need. */
function conntrackLines(c: ConntrackProbe, line: (label: string, item: ProbeItem) => string): string {
  const entries =
    c.entries === undefined
      ? { ok: false, detail: "not known" }
      : { ok: true, detail: `${c.entries} in this namespace's table` };
  return `\nconntrack (ctnetlink):\n${line("answers", c.answers)}${line("delete", c.delete)}${line("entries", entries)}`;
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: DOCTOR, run: runDoctor };
