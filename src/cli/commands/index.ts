/**
 * The command table: each command's name, its one-line summary for `sockdiag --help`, and how to
 * load it. Commands are loaded only when run (or asked for their help), so that start-up reads only
 * what the command at hand needs: `--help` and `--version` load no command, `ls` not the terminator.
 */
import type { CommandSpec } from "../io/index.js";

/** A loaded command: its option table and its entry point (returns the exit status). */
export interface Command {
  spec: CommandSpec;
  run: (argv: readonly string[]) => number | Promise<number>;
}

/** A command as the dispatcher knows it before loading it. */
export interface CommandEntry {
  name: string;
  /** The first sentence of the command's summary (a test keeps the two equal). */
  summary: string;
  load: () => Promise<Command>;
}

export const COMMANDS: readonly CommandEntry[] = [
  {
    name: "ls",
    summary: "List sockets",
    load: () => import("./ls.js").then((m) => m.command),
  },
  {
    name: "kill",
    summary: "Destroy the sockets that match",
    load: () => import("./kill.js").then((m) => m.command),
  },
  {
    name: "terminate-backend",
    summary:
      "Destroy every connected socket whose destination is one of the backends IP:PORT, in the host and every other network namespace, pinned or in use by a process",
    load: () => import("./terminate-backend.js").then((m) => m.command),
  },
  {
    name: "conntrack",
    summary: "List (ls, -L) or delete (rm, -D) connection-tracking entries, in this namespace or others",
    load: () => import("./conntrack.js").then((m) => m.command),
  },
  {
    name: "watch",
    summary: "Print sockets as the kernel frees them (ss -E), until interrupted",
    load: () => import("./watch.js").then((m) => m.command),
  },
  {
    name: "netns",
    summary:
      "List network namespaces: pinned name, path, inode, the processes in each, and its socket count.",
    load: () => import("./netns.js").then((m) => m.command),
  },
  {
    name: "doctor",
    summary:
      "Check what this kernel and these privileges allow: listing per protocol, destroy, namespaces, conntrack, which namespaces have a UDP table of their own, and which path terminations take (the one pass or a walk of every namespace) and why.",
    load: () => import("./doctor.js").then((m) => m.command),
  },
  {
    name: "completion",
    summary: "Print the shell completion script for bash, zsh or fish",
    load: () => import("./completion.js").then((m) => m.command),
  },
];

/** The first sentence of a summary, as `sockdiag --help` shows it. */
export function firstSentence(summary: string): string {
  return summary.split(". ")[0]!;
}
