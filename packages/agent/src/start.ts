/**
 * startAgent: the agent put together from its options — kubeconfig, informer, state file, HTTP
 * endpoints, metrics, logger, terminator — and started. Collaborators can be passed in (tests and
 * the demo use their own logger stream, a stand-in API server, faster restarts).
 */
import { type DestinationStream, type Logger, pino } from "pino";
import { Agent } from "./agent.js";
import { type BackoffOptions, ExponentialBackoff } from "./backoff.js";
import { type Clock, systemClock } from "./clock.js";
import { EventApi } from "./event-api.js";
import { EventRecorder } from "./events.js";
import type { ExecCall } from "./exec-credential.js";
import { AgentHttpServer, type ListenAddress } from "./http-server.js";
import { EndpointSliceApi, PODS_PATH } from "./kube-api.js";
import { loadKubeConfig } from "./kubeconfig.js";
import { AgentMetrics } from "./metrics.js";
import type { AgentOptions } from "./options.js";
import { PodEvents } from "./pod-events.js";
import { PodStore } from "./pods.js";
import { Reflector, type ReflectorOptions } from "./reflector.js";
import { reflectorLog } from "./reflector-log.js";
import { RequestAuth } from "./request-auth.js";
import { SliceStore } from "./slice-store.js";
import { StateFile } from "./state-file.js";
import { libraryTerminator, type Terminator } from "./terminator.js";

export interface StartParts {
  terminator?: Terminator;
  /** The logger (main makes it before start-up, so that a start-up failure is a JSON line too). */
  logger?: Logger;
  /** Where the JSON log lines go when no logger is given; default stdout. */
  logStream?: DestinationStream;
  /** Reflector settings beyond the watch timeout. */
  watch?: Omit<ReflectorOptions, "watchTimeoutMs">;
  /** The reflector's back-off (tests: quicker). */
  backoff?: BackoffOptions;
  /** The environment KUBECONFIG and KUBERNETES_SERVICE_HOST are read from; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** How long a kubeconfig exec credential plugin may run before it is killed; default 30,000 ms. */
  execTimeoutMs?: number;
  /** The clock of the Events' rate and series window (tests: a ManualClock). */
  clock?: Clock;
  /** Called when the terminator failed fatally (the default: exit status 1 after stopping). */
  onFatal?: (err: unknown) => void;
}

export interface RunningAgent {
  readonly listen: ListenAddress;
  readonly metrics: AgentMetrics;
  readonly logger: Logger;
  /** Readiness: the first list was applied whole, lists and watches work, and so does an exec plugin. */
  ready(): boolean;
  /** Liveness: the process works (its event loop answers this, and the terminator has not failed). */
  live(): boolean;
  /** Where the EndpointSlice watch stands (resumes from). */
  resourceVersion(): string;
  /** Stop watching, finish the batch in flight, save the state, close the endpoints. Idempotent. */
  stop(): Promise<void>;
}

export async function startAgent(options: AgentOptions, parts: StartParts = {}): Promise<RunningAgent> {
  const logger = parts.logger ?? makeLogger(options.logLevel, parts.logStream);
  const { kubeConfig, source } = loadKubeConfig(options.kubeconfig, parts.env);
  const metrics = new AgentMetrics();
  const auth = new RequestAuth(kubeConfig, {
    ...(parts.execTimeoutMs !== undefined ? { timeoutMs: parts.execTimeoutMs } : {}),
    ...(parts.env ? { env: parts.env } : {}),
    onCall: execCallReporter(metrics, logger),
  });
  const state = new StateFile(options.stateDir);
  await state.prepare();
  const bounds = { maxObjectBytes: options.maxObjectBytes, maxListBytes: options.maxListBytes };
  const node = options.events && !options.dryRun ? options.nodeName : undefined;
  if (options.events && !options.dryRun && node === undefined)
    logger.warn("no node name (--node-name, SOCKDIAG_AGENT_NODE_NAME): no Events on pods");
  const pods = node === undefined ? undefined : new PodStore(node);
  const podWatch =
    node === undefined || pods === undefined
      ? undefined
      : new Reflector(
          new EndpointSliceApi(kubeConfig, bounds, auth, {
            path: PODS_PATH,
            fieldSelector: `spec.nodeName=${node}`,
          }),
          pods,
          reflectorLog(metrics, logger, "pod"),
          new ExponentialBackoff(parts.backoff),
          { ...parts.watch, watchTimeoutMs: options.watchTimeoutMs },
        );
  const events =
    node === undefined || pods === undefined
      ? undefined
      : new PodEvents(
          new EventRecorder({
            sink: new EventApi(kubeConfig, auth),
            controller: "sockdiag.io/agent",
            instance: node,
            action: "Terminate",
            clock: parts.clock ?? systemClock,
            logger,
            onOutcome: (outcome) => metrics.podEvents.inc({ outcome }),
          }),
          pods,
          logger,
        );
  const terminator =
    parts.terminator ??
    libraryTerminator({
      netnsDirs: options.netnsDirs,
      discover: options.discover,
      conntrack: options.conntrack,
      onePass: options.onePass,
      dryRun: options.dryRun,
      socketPods: events !== undefined,
    });
  let stopping: Promise<void> | undefined;
  const agent = new Agent(
    {
      policy: options.onTerminating,
      coalesceMs: options.coalesceMs,
      aftercareMs: options.aftercareMs,
      dryRun: options.dryRun,
    },
    {
      terminator,
      state,
      metrics,
      logger,
      ...(events ? { events } : {}),
      onFatal: (err) => (parts.onFatal ?? (() => void stop().finally(() => process.exit(1))))(err),
    },
  );
  await agent.load();
  const watch = new Reflector(
    new EndpointSliceApi(kubeConfig, bounds, auth),
    new SliceStore(agent, options.protocols, metrics, logger),
    reflectorLog(metrics, logger),
    new ExponentialBackoff(parts.backoff),
    { ...parts.watch, watchTimeoutMs: options.watchTimeoutMs },
  );
  const live = () => agent.isWorking();
  const ready = () => agent.isSynced() && watch.healthy() && auth.healthy();
  metrics.observeReadiness(ready);
  const http = new AgentHttpServer(metrics.registry, { live, ready });
  const listen = await http.listen(options.listen);
  logger.info(
    {
      listen: `${listen.host}:${listen.port}`,
      server: kubeConfig.getCurrentCluster()?.server,
      config: source,
      execPlugin: auth.exec !== undefined,
      watchTimeoutS: options.watchTimeoutMs / 1000,
      protocols: options.protocols,
      onTerminating: options.onTerminating,
      coalesceMs: options.coalesceMs,
      aftercareS: options.aftercareMs / 1000,
      maxObjectBytes: options.maxObjectBytes,
      maxListBytes: options.maxListBytes,
      conntrack: options.conntrack,
      onePass: options.onePass,
      discover: options.discover,
      dryRun: options.dryRun,
      events: events !== undefined,
      node: options.nodeName,
    },
    "agent started",
  );
  const checks = terminator.check ? await terminator.check() : undefined;
  if (checks) {
    const failed = Object.entries(checks).filter(([, c]) => !c.ok);
    logger.info(
      { checks: Object.fromEntries(Object.entries(checks).map(([k, c]) => [k, c.ok])) },
      "node checked",
    );
    for (const [check, c] of failed)
      if (check !== "onePass") logger.warn({ check, detail: c.detail }, "node check failed");
  }
  // Which path terminations take, and why (the library probed the pass; "auto" may still walk
  // where the namespaces have UDP tables of their own, and says so in each batch's report).
  const pass = checks?.onePass;
  const path = options.onePass !== "off" && pass?.ok ? "one-pass" : "walk";
  const why =
    options.onePass === "off" ? "--one-pass off" : (pass?.detail ?? "the terminator was not probed");
  metrics.onePass.set({ mode: options.onePass, path }, 1);
  logger.info({ onePass: options.onePass, path, why }, "terminations path");
  watch.start();
  podWatch?.start();

  function stop(): Promise<void> {
    stopping ??= (async () => {
      await watch.stop();
      await podWatch?.stop();
      await agent.stop();
      await events?.stop();
      await auth.close();
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
    ready,
    live,
    resourceVersion: () => watch.resourceVersion(),
    stop,
  };
}

/** Count each exec plugin run, and log the failures and the first success after them. */
function execCallReporter(metrics: AgentMetrics, logger: Logger): (call: ExecCall) => void {
  let failing = false;
  return (call) => {
    metrics.execPluginCalls.inc({ outcome: call.outcome });
    if (call.error) {
      failing = true;
      logger.error(
        { err: call.error, outcome: call.outcome, pid: call.pid, stderr: call.error.stderr },
        "exec credential plugin failed",
      );
      return;
    }
    const expires = call.expiresAt ? new Date(call.expiresAt).toISOString() : undefined;
    if (failing) logger.info({ pid: call.pid, expires }, "exec credential plugin works again");
    else logger.debug({ pid: call.pid, expires }, "exec credential plugin ran");
    failing = false;
  };
}

/** The agent's JSON logger: errors under `err` through pino's serializer (type, message, stack, code). */
export function makeLogger(level: string, stream?: DestinationStream): Logger {
  return pino({ level, base: { name: "sockdiag-agent" } }, stream);
}
