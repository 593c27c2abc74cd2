#!/usr/bin/env node
/**
 * `sockdiag-agent`: the node agent's entry point. Exit status: 0 after SIGTERM or SIGINT (the
 * batch in flight finished, the state saved), 1 when it could not start, crashed or the terminator
 * failed — each said in one JSON log line — and 2 for a usage error (a line of text on stderr, for
 * the person who typed it).
 */
import { readFileSync } from "node:fs";
import { helpText, parseOptions, UsageError } from "./options.js";
import { makeLogger, startAgent } from "./start.js";

async function main(): Promise<void> {
  let command: ReturnType<typeof parseOptions>;
  try {
    command = parseOptions(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError)) throw err;
    process.stderr.write(`sockdiag-agent: ${err.message}\n`);
    process.exitCode = 2;
    return;
  }
  if ("help" in command) {
    process.stdout.write(helpText());
    return;
  }
  if ("version" in command) {
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      version: string;
    };
    process.stdout.write(`sockdiag-agent ${pkg.version}\n`);
    return;
  }
  const logger = makeLogger(command.run.logLevel);
  const crash = (what: string) => (err: unknown) => {
    logger.fatal({ err }, what);
    process.exit(1);
  };
  process.on("uncaughtException", crash("crashed"));
  process.on("unhandledRejection", crash("crashed"));
  // Signals are taken before start-up finishes: a SIGTERM that arrives while the first list or the
  // node check is still running must stop the agent cleanly, not kill it with the default action.
  let agent: Awaited<ReturnType<typeof startAgent>> | undefined;
  let requested: string | undefined;
  const shutdown = (signal: string) => {
    if (agent === undefined) {
      requested ??= signal;
      return;
    }
    agent.logger.info({ signal }, "stopping");
    agent.stop().then(
      () => process.exit(0),
      (err: unknown) => {
        agent?.logger.fatal({ err }, "stop failed");
        process.exit(1);
      },
    );
  };
  process.once("SIGTERM", () => shutdown("SIGTERM"));
  process.once("SIGINT", () => shutdown("SIGINT"));
  try {
    agent = await startAgent(command.run, { logger });
  } catch (err) {
    crash("cannot start")(err);
    return;
  }
  if (requested !== undefined) shutdown(requested);
}

void main();
