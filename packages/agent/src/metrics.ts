/**
 * The agent's Prometheus metrics, one registry per agent (no globals: two agents in one test
 * process count apart). Names follow Prometheus: the sockdiag_agent_ prefix, counters ending in
 * _total, durations in seconds; labels only with small fixed sets; one counter per thing (a failed
 * socket is in sockets_total{outcome="failed"}, a failed namespace in namespaces_failed_total,
 * nowhere else). prom-client's default metrics (process_*, nodejs_*: event-loop delay, heap, GC)
 * keep their usual names, which the standard dashboards query — but for the three gauges it names
 * *_total, which `promtool check metrics` rejects (a gauge must not end in _total).
 */
import { Counter, collectDefaultMetrics, Gauge, Histogram, Registry } from "prom-client";
import type { BatchOutcome } from "./terminator.js";

export const PREFIX = "sockdiag_agent_";

/** prom-client's default gauges whose names end in _total (promtool: only counters may). */
const GAUGES_NAMED_TOTAL = [
  "nodejs_active_handles_total",
  "nodejs_active_requests_total",
  "nodejs_active_resources_total",
];

export class AgentMetrics {
  readonly registry = new Registry();
  readonly sockets = new Counter({
    name: `${PREFIX}sockets_total`,
    help: "Sockets connected to removed backends, by outcome (destroyed, gone, failed, skipped)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly conntrack = new Counter({
    name: `${PREFIX}conntrack_entries_total`,
    help: "Conntrack entries of removed backends, by outcome (deleted, gone, failed, skipped)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly lateSockets = new Counter({
    name: `${PREFIX}late_sockets_total`,
    help: "Sockets found connected to a removed backend by an aftercare pass (the dataplane lagged), by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly lateConntrack = new Counter({
    name: `${PREFIX}late_conntrack_entries_total`,
    help: "Conntrack entries of a removed backend found by an aftercare pass (the dataplane lagged), by outcome",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly aftercarePasses = new Counter({
    name: `${PREFIX}aftercare_passes_total`,
    help: "Aftercare passes run (one visit of every namespace for the removed backends due)",
    registers: [this.registry],
  });
  readonly onePass = new Gauge({
    name: `${PREFIX}one_pass`,
    help: "1 for the path terminations take, as the agent found at start: path one-pass (a BPF pass, then only the namespaces that need it) or walk (every namespace); mode is --one-pass",
    labelNames: ["mode", "path"] as const,
    registers: [this.registry],
  });
  readonly aftercare = new Gauge({
    name: `${PREFIX}aftercare_backends`,
    help: "Removed backends watched over for late sockets and flows",
    registers: [this.registry],
  });
  readonly removals = new Counter({
    name: `${PREFIX}removals_total`,
    help: "Backend removals handled",
    registers: [this.registry],
  });
  readonly batches = new Counter({
    name: `${PREFIX}batches_total`,
    help: "Removal batches run (one pass over every namespace each)",
    registers: [this.registry],
  });
  readonly namespacesVisited = new Counter({
    name: `${PREFIX}namespaces_visited_total`,
    help: "Network namespaces visited by removal batches, the host included",
    registers: [this.registry],
  });
  readonly namespacesFailed = new Counter({
    name: `${PREFIX}namespaces_failed_total`,
    help: "Network namespaces that could not be visited or listed",
    registers: [this.registry],
  });
  readonly lists = new Counter({
    name: `${PREFIX}lists_total`,
    help: "Whole EndpointSlice lists applied (the first sync, and each re-list after 410 Gone)",
    registers: [this.registry],
  });
  readonly watchRestarts = new Counter({
    name: `${PREFIX}watch_restarts_total`,
    help: "Times the EndpointSlice watch was started again after an error or a closed connection",
    registers: [this.registry],
  });
  readonly errors = new Counter({
    name: `${PREFIX}errors_total`,
    help: "Failed EndpointSlice lists and watches, Pod lists and watches, and state file errors, by where (list, watch, pod_list, pod_watch, state)",
    labelNames: ["where"] as const,
    registers: [this.registry],
  });
  readonly execPluginCalls = new Counter({
    name: `${PREFIX}exec_plugin_calls_total`,
    help: "Runs of the kubeconfig's exec credential plugin, by outcome (ok, timeout, failed, invalid)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly tooLarge = new Counter({
    name: `${PREFIX}answers_too_large_total`,
    help: "API answers abandoned for a bound: an object over --max-object-bytes, a list over --max-list-bytes",
    labelNames: ["bound"] as const,
    registers: [this.registry],
  });
  readonly skipped = new Counter({
    name: `${PREFIX}slice_parts_skipped_total`,
    help: "Parts of EndpointSlices skipped as naming nothing to act on or malformed, by reason",
    labelNames: ["reason"] as const,
    registers: [this.registry],
  });
  readonly podEvents = new Counter({
    name: `${PREFIX}pod_events_total`,
    help: "Kubernetes Events about pods whose sockets were destroyed, by outcome (posted, updated, dropped, failed)",
    labelNames: ["outcome"] as const,
    registers: [this.registry],
  });
  readonly eventToTerminated = new Histogram({
    name: `${PREFIX}event_to_terminated_seconds`,
    help: "Time from the change that removed a backend to the end of its batch (coalescing window included)",
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30],
    registers: [this.registry],
  });
  readonly batchDuration = new Histogram({
    name: `${PREFIX}batch_duration_seconds`,
    help: "Time one removal batch took to visit every namespace",
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  readonly backends = new Gauge({
    name: `${PREFIX}backends`,
    help: "Backends listed by some EndpointSlice, and removals not yet settled (terminated if they go away)",
    registers: [this.registry],
  });
  /** Readiness as /readyz decides it, read at each scrape (observeReadiness). */
  readonly ready: Gauge = new Gauge({
    name: `${PREFIX}ready`,
    help: "1 while the agent is ready (/readyz answers 200), else 0",
    registers: [this.registry],
    collect: () => {
      this.ready.set(this.readiness() ? 1 : 0);
    },
  });
  private readiness: () => boolean = () => false;
  readonly pending = new Gauge({
    name: `${PREFIX}pending_removals`,
    help: "Removals waiting for the coalescing window or for the batch in flight",
    registers: [this.registry],
  });

  constructor() {
    collectDefaultMetrics({ register: this.registry });
    for (const name of GAUGES_NAMED_TOTAL) this.registry.removeSingleMetric(name);
  }

  /** Export `ready`, the check /readyz answers with, as the gauge sockdiag_agent_ready. */
  observeReadiness(ready: () => boolean): void {
    this.readiness = ready;
  }

  /** Count a finished removal batch. */
  countBatch(removals: number, outcome: BatchOutcome, seconds: number): void {
    this.batches.inc();
    this.removals.inc(removals);
    countOutcomes(outcome, this.sockets, this.conntrack);
    this.namespacesVisited.inc(outcome.namespaces.visited);
    this.namespacesFailed.inc(outcome.namespaces.failed);
    this.batchDuration.observe(seconds);
  }

  /** Count a finished aftercare pass: what it found is late, apart from the batches' counts. */
  countLate(outcome: BatchOutcome): void {
    this.aftercarePasses.inc();
    countOutcomes(outcome, this.lateSockets, this.lateConntrack);
    this.namespacesVisited.inc(outcome.namespaces.visited);
    this.namespacesFailed.inc(outcome.namespaces.failed);
  }
}

function countOutcomes(
  outcome: BatchOutcome,
  sockets: Counter<"outcome">,
  conntrack: Counter<"outcome">,
): void {
  for (const k of ["destroyed", "gone", "failed", "skipped"] as const)
    sockets.inc({ outcome: k }, outcome.sockets[k]);
  for (const k of ["deleted", "gone", "failed", "skipped"] as const)
    conntrack.inc({ outcome: k }, outcome.conntrack[k]);
}
