/** `sockdiag doctor`: what this kernel and these privileges allow, as a checklist. */

import { type ProbeItem, probe } from "../../sockets/index.js";
import { type CommandSpec, parseCommand } from "../options.js";
import { writeOut } from "../output.js";
import { EXIT_FAILED, EXIT_OK } from "../usage.js";
import type { Command } from "./index.js";

export const DOCTOR: CommandSpec = {
  name: "doctor",
  usage: "[-j]",
  summary: "Check what this kernel and these privileges allow: listing per protocol, destroy, namespaces.",
  options: [{ name: "json", short: "j", help: "print the checks as JSON" }],
};

export function runDoctor(argv: readonly string[]): number {
  const { values } = parseCommand(DOCTOR, argv);
  const result = probe();
  const essential = [result.diag.udp, result.diag.tcp, result.destroy];
  if (values.json) {
    writeOut(`${JSON.stringify(result, null, 2)}\n`);
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
    writeOut(text);
  }
  return essential.every((i) => i.ok) ? EXIT_OK : EXIT_FAILED;
}

/** The command as the dispatcher runs it. */
export const command: Command = { spec: DOCTOR, run: runDoctor };
