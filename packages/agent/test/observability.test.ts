/**
 * What ships in deploy/ to watch the agent — the Grafana dashboard, the alert rules and their
 * PrometheusRule — checked against an agent's real /metrics, and by promtool (Debian package
 * prometheus, installed by .ci/run: without it these tests fail).
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { before, describe, test } from "node:test";
import { loadYaml } from "@kubernetes/client-node";
import { DEPLOY, PROMETHEUS_RULE_FILE, prometheusRule, RULES_FILE } from "../scripts/prometheus-rule.js";
import { scratchDir, standInServerPerFile, startTestAgent, udpSlice, until } from "./kit/index.js";
import { exportedMetrics, queriedMetrics } from "./kit/promql.js";

const server = standInServerPerFile();
const read = (name: string) => readFileSync(join(DEPLOY, name), "utf8");
const RULES_TEST_FILE = "prometheus/sockdiag-agent.rules.test.yaml";

interface Rule {
  alert?: string;
  record?: string;
  expr: string;
}
const rules = () =>
  (loadYaml(read(RULES_FILE)) as { groups: { rules: Rule[] }[] }).groups.flatMap((g) => g.rules);

function promtool(...args: string[]): string {
  const r = spawnSync("promtool", args, { cwd: DEPLOY, encoding: "utf8" });
  assert.equal(r.error, undefined, "promtool (Debian package prometheus) must be installed");
  assert.equal(r.status, 0, r.stdout + r.stderr);
  return r.stdout;
}

/** Every string under an "expr" key, and the metric of each query variable, of a Grafana dashboard. */
function dashboardQueries(node: unknown, found: string[] = []): string[] {
  if (Array.isArray(node)) for (const item of node) dashboardQueries(item, found);
  else if (typeof node === "object" && node !== null)
    for (const [key, value] of Object.entries(node)) {
      if (key === "expr" && typeof value === "string") found.push(value);
      else if (key === "definition" && typeof value === "string")
        found.push(
          /^label_values\((.+),\s*\w+\)$/.exec(value)?.[1] ?? assert.fail(`variable query ${value}`),
        );
      else dashboardQueries(value, found);
    }
  return found;
}

describe("metric names in PromQL", () => {
  test("names are read past functions, aggregations, matchers, ranges, label lists, numbers and variables", () => {
    const expr =
      'histogram_quantile(0.9, sum by (le, instance) (rate(a_seconds_bucket{instance=~"$instance", x="b c"}[$__rate_interval])))' +
      " > 1e3 and on (instance) (b_total offset 5m) or sum(c:rule) without (job) unless bool d > 0.5";
    assert.deepEqual([...queriedMetrics(expr)].sort(), ["a_seconds_bucket", "b_total", "c:rule", "d"]);
  });

  test("a scrape exports each family, with a histogram's series", () => {
    const scrape = '# HELP h x\n# TYPE h histogram\nh_bucket{le="1"} 0\n# TYPE c_total counter\nc_total 1\n';
    assert.deepEqual([...exportedMetrics(scrape)].sort(), ["c_total", "h", "h_bucket", "h_count", "h_sum"]);
  });
});

describe("deploy/ against the agent's /metrics", () => {
  let exported: Set<string>;
  before(async () => {
    const dir = await scratchDir("observability");
    const t = await startTestAgent(server.api, { stateDir: dir.path });
    try {
      exported = exportedMetrics(await (await fetch(`${t.url}/metrics`)).text());
    } finally {
      await t.stop();
      await dir.remove();
    }
  });
  const unexported = (exprs: string[]) =>
    exprs.flatMap((e) => [...queriedMetrics(e)]).filter((n) => !exported.has(n));

  test("every metric the Grafana dashboard queries is one the agent exports", () => {
    const queries = dashboardQueries(JSON.parse(read("grafana/sockdiag-agent.json")));
    const queried = new Set(queries.flatMap((q) => [...queriedMetrics(q)]));
    for (const name of [
      "sockdiag_agent_removals_total",
      "sockdiag_agent_sockets_total",
      "sockdiag_agent_conntrack_entries_total",
      "sockdiag_agent_event_to_terminated_seconds_bucket",
      "sockdiag_agent_lists_total",
      "sockdiag_agent_watch_restarts_total",
      "sockdiag_agent_slice_parts_skipped_total",
      "sockdiag_agent_late_sockets_total",
      "sockdiag_agent_exec_plugin_calls_total",
      "process_resident_memory_bytes",
      "nodejs_eventloop_lag_p99_seconds",
    ])
      assert.ok(queried.has(name), `the dashboard shows ${name}`);
    assert.deepEqual(unexported(queries), []);
  });

  test("every metric the alert rules query is one the agent exports", () => {
    assert.deepEqual(unexported(rules().map((r) => r.expr)), []);
  });
});

describe("Grafana dashboard", () => {
  interface Panel {
    type: string;
    title: string;
    datasource?: { uid?: string };
    targets?: { expr: string; datasource?: { uid?: string } }[];
  }

  // biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's syntax for its variable `datasource`
  const PICKED_DATA_SOURCE = "${datasource}";

  test("each panel queries the data source picked at import, for the agents selected", () => {
    const panels = (JSON.parse(read("grafana/sockdiag-agent.json")) as { panels: Panel[] }).panels;
    const charts = panels.filter((p) => p.type !== "row");
    assert.ok(charts.length > 0);
    for (const panel of charts) {
      assert.equal(panel.datasource?.uid, PICKED_DATA_SOURCE, panel.title);
      assert.ok((panel.targets ?? []).length > 0, panel.title);
      for (const target of panel.targets ?? []) {
        assert.equal(target.datasource?.uid, PICKED_DATA_SOURCE, panel.title);
        assert.match(target.expr, /\{instance=~"\$instance"\}/, panel.title);
      }
    }
  });
});

describe("alert rules", () => {
  test("promtool checks the rules file and passes its unit tests", () => {
    assert.match(promtool("check", "rules", RULES_FILE), /SUCCESS: \d+ rules found/);
    assert.match(promtool("test", "rules", RULES_TEST_FILE), /SUCCESS/);
  });

  test("each alert has a unit test where it fires and one where it does not", () => {
    interface AlertTest {
      alertname: string;
      exp_alerts?: unknown[];
    }
    const unitTests = loadYaml(read(RULES_TEST_FILE)) as { tests: { alert_rule_test?: AlertTest[] }[] };
    const checks = unitTests.tests.flatMap((t) => t.alert_rule_test ?? []);
    const alerts = rules().flatMap((r) => (r.alert ? [r.alert] : []));
    assert.ok(alerts.length >= 6, "the six alerts of issue 41");
    for (const alert of alerts) {
      const mine = checks.filter((c) => c.alertname === alert);
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length > 0),
        `${alert} fires in a test`,
      );
      assert.ok(
        mine.some((c) => (c.exp_alerts ?? []).length === 0),
        `${alert} stays silent in a test`,
      );
    }
  });

  test("the PrometheusRule is written from the rules file (npm run prometheus-rule -w sockdiag-agent)", () => {
    assert.equal(read(PROMETHEUS_RULE_FILE), prometheusRule(read(RULES_FILE)));
  });
});

describe("sockdiag_agent_ready", () => {
  test("is 0 while /readyz answers 503 and 1 once it answers 200", async () => {
    const dir = await scratchDir("observability");
    server.cleanups.push(dir.remove);
    server.api.apply(udpSlice("ready-a", "ready", 53, ["10.28.0.1"]));
    server.api.stall("list");
    const t = await startTestAgent(server.api, { stateDir: dir.path, unready: true, watchTimeoutMs: 1000 });
    server.cleanups.push(t.stop);
    const scrape = async () =>
      (await (await fetch(`${t.url}/metrics`)).text()).match(/^sockdiag_agent_ready (\S+)$/m)?.[1];
    assert.equal((await fetch(`${t.url}/readyz`)).status, 503);
    assert.equal(await scrape(), "0");
    server.api.stall("list", false);
    await until(async () => (await fetch(`${t.url}/readyz`)).status === 200, 15_000, "the agent to be ready");
    assert.equal(await scrape(), "1");
  });
});

describe("sockdiag_agent_one_pass", () => {
  test("says at start which path terminations take, in the log and as a metric", async () => {
    const dir = await scratchDir("one-pass");
    server.cleanups.push(dir.remove);
    const t = await startTestAgent(server.api, { stateDir: dir.path, onePass: "off" });
    server.cleanups.push(t.stop);
    const found = () => t.logs.find((l) => l.msg === "terminations path");
    await until(() => found() !== undefined, 10_000, "the terminations path's log line");
    const line = found()!;
    assert.deepEqual(
      { onePass: line.onePass, path: line.path, why: line.why },
      { onePass: "off", path: "walk", why: "--one-pass off" },
    );
    const text = await (await fetch(`${t.url}/metrics`)).text();
    assert.match(text, /^sockdiag_agent_one_pass\{mode="off",path="walk"\} 1$/m);
  });
});
