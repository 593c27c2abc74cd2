/**
 * startAgent: the agent put together from its options — kubeconfig, informer, state file, HTTP
 * endpoints, metrics, logger, terminator — and started. Collaborators can be passed in (tests and
 * the demo use their own logger stream, a stand-in API server, faster restarts).
 */
import { KubeConfig } from "@kubernetes/client-node";
import { type DestinationStream, type Logger, pino } from "pino";
import { Agent } from "./agent.js";
import { AgentHttpServer, type ListenAddress } from "./http-server.js";
import { AgentMetrics } from "./metrics.js";
import type { AgentOptions } from "./options.js";
import { SliceWatch, type SliceWatchOptions } from "./slice-watch.js";
import { StateFile } from "./state-file.js";
import { libraryTerminator, type Terminator } from "./terminator.js";

export interface StartParts {
  terminator?: Terminator;
  /** Where the JSON log lines go; default stdout. */
  logStream?: DestinationStream;
  watch?: SliceWatchOptions;
  /** Called when the terminator failed fatally (the default: exit status 1 after stopping). */
  onFatal?: (err: unknown) => void;
}

export interface RunningAgent {
  readonly listen: ListenAddress;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  ready(): boolean;
  live(): boolean;
  /** Where the EndpointSlice watch stands (resumes from). */
  resourceVersion(): string;
  /** Stop watching, finish the batch in flight, save the state, close the endpoints. Idempotent. */
  stop(): Promise<void>;
}

export function loadKubeConfig(file: string | undefined): KubeConfig {
  const kc = new KubeConfig();
  if (file === undefined) kc.loadFromCluster();
  else kc.loadFromFile(file);
  return kc;
}

export async function startAgent(options: AgentOptions, parts: StartParts = {}): Promise<RunningAgent> {
  const logger = pino({ level: options.logLevel, base: { name: "sockdiag-agent" } }, parts.logStream);
  const kubeConfig = loadKubeConfig(options.kubeconfig);
  const metrics = new AgentMetrics();
  const terminator =
    parts.terminator ??
    libraryTerminator({
      netnsDirs: options.netnsDirs,
      discover: options.discover,
      conntrack: options.conntrack,
      dryRun: options.dryRun,
    });
  let stopping: Promise<void> | undefined;
  const agent = new Agent(
    {
      protocols: options.protocols,
      policy: options.onTerminating,
      coalesceMs: options.coalesceMs,
      dryRun: options.dryRun,
    },
    {
      terminator,
      state: new StateFile(options.stateDir),
      metrics,
      logger,
      onFatal: (err) => (parts.onFatal ?? (() => void stop().finally(() => process.exit(1))))(err),
    },
  );
  await agent.load();
  const watch = new SliceWatch(kubeConfig, agent, parts.watch);
  const http = new AgentHttpServer(metrics.registry, {
    live: () => watch.alive(),
    ready: () => agent.ready(),
  });
  const listen = await http.listen(options.listen);
  logger.info(
    {
      listen: `${listen.host}:${listen.port}`,
      server: kubeConfig.getCurrentCluster()?.server,
      protocols: options.protocols,
      onTerminating: options.onTerminating,
      coalesceMs: options.coalesceMs,
      conntrack: options.conntrack,
      discover: options.discover,
      dryRun: options.dryRun,
    },
    "agent started",
  );
  if (terminator.check) {
    const checks = await terminator.check();
    const failed = Object.entries(checks).filter(([, c]) => !c.ok);
    logger.info(
      { checks: Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.ok])) },
      "node checked",
    );
    for (const [check, c] of failed) logger.warn({ check, detail: c.detail }, "node check failed");
  }
  await watch.start();

  function stop(): Promise<void> {
    stopping ??= (async () => {
      await watch.stop();
      await agent.stop();
      await http.close();
      await terminator.close?.();
      logger.info("agent stopped");
    })();
    return stopping;
  }
  return {
    listen,
    metrics,
    logger,
    ready: () => agent.ready(),
    live: () => watch.alive(),
    resourceVersion: () => watch.resourceVersion(),
    stop,
  };
}
