/**
 * `npm run prometheus-rule -w sockdiag-agent`: writes deploy/prometheus-rule/prometheusrule.yaml, the
 * alerts as the Prometheus operator takes them, from deploy/prometheus/sockdiag-agent.rules.yaml, the
 * one source: its groups under `spec:`, text and comments as they are. The agent's tests check that
 * the committed file is what this writes.
 */
import { readFileSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const DEPLOY = fileURLToPath(new URL("../../../../deploy/", import.meta.url));
export const RULES_FILE = "prometheus/sockdiag-agent.rules.yaml";
export const PROMETHEUS_RULE_FILE = "prometheus-rule/prometheusrule.yaml";

const HEADER = `# Written by \`npm run prometheus-rule -w sockdiag-agent\` from deploy/${RULES_FILE}: edit that file
# and run it. The agent's alerts for the Prometheus operator, enabled by \`components: [prometheus-rule]\`
# in deploy/kustomization.yaml, which gives the PrometheusRule its namespace.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: sockdiag-agent
  labels:
    app.kubernetes.io/name: sockdiag-agent
spec:
`;

/** The PrometheusRule holding the rules file's groups (its leading comment left out). */
export function prometheusRule(rules: string): string {
  const lines = rules.split("\n");
  const start = lines.findIndex((line) => !line.startsWith("#"));
  const body = lines.slice(start).map((line) => (line === "" ? line : `  ${line}`));
  return HEADER + body.join("\n");
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const rules = readFileSync(DEPLOY + RULES_FILE, "utf8");
  writeFileSync(DEPLOY + PROMETHEUS_RULE_FILE, prometheusRule(rules));
}
