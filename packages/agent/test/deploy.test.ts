/**
 * deploy/ as `kubectl apply -k deploy/` applies it: rendered by `kubectl kustomize` (Debian's
 * kubernetes-client; CI installs it, and without it this suite fails in CI and is skipped loudly
 * elsewhere), loaded as Kubernetes objects by the client library (a field it does not know is
 * dropped, so a misspelt field fails here), and checked against what the agent needs on a node.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "node:test";
import { fileURLToPath } from "node:url";
import {
  loadAllYaml,
  loadYaml,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1DaemonSet,
  type V1ServiceAccount,
} from "@kubernetes/client-node";
import { backendText } from "../src/backend.js";
import { DEFAULT_NETNS_DIRS, parseOptions } from "../src/options.js";
import { emptyOutcome } from "../src/terminator.js";
import {
  type HttpCall,
  RecordingTerminator,
  StandInApiServer,
  scratchDir,
  startTestAgent,
  udpSlice,
  until,
} from "./kit/index.js";

const DEPLOY = fileURLToPath(new URL("../../../../deploy/", import.meta.url));
const read = (name: string) => readFileSync(join(DEPLOY, name), "utf8");
const agentVersion = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

interface Rendered {
  kind: string;
  metadata?: { name?: string; namespace?: string };
}

/** `kubectl kustomize DIR` as objects. */
function kustomize(dir: string): Rendered[] {
  const r = spawnSync("kubectl", ["kustomize", dir], { encoding: "utf8" });
  if (r.error) throw new Error(`kubectl (Debian package kubernetes-client) is needed: ${r.error.message}`);
  assert.equal(r.status, 0, r.stderr);
  return loadAllYaml(r.stdout) as Rendered[];
}

/**
 * What an agent asks of the API server through a start, a removal, a dropped watch and a watch
 * answered 410 (then a list again), as RBAC names it: "VERB GROUP/RESOURCE", each once.
 */
async function requestsOfAnAgent(): Promise<Set<string>> {
  const api = await StandInApiServer.start();
  const dir = await scratchDir("rbac");
  try {
    api.apply(udpSlice("dns-a", "dns", 53, ["10.9.0.1", "10.9.0.2", "10.9.0.3"]));
    const uid = "00000000-0000-4000-8000-000000000001";
    api.applyPod({
      metadata: { namespace: "apps", name: "client", uid },
      spec: { nodeName: "node-a", containers: [] },
    });
    // Each batch destroyed a socket of the client pod: an Event, then its series' update.
    const terminator = new RecordingTerminator((backends) => ({
      ...emptyOutcome(),
      pods: [{ uid, backends: new Map(backends.map((b) => [backendText(b), 1])) }],
    }));
    const t = await startTestAgent(api, { stateDir: dir.path, terminator, nodeName: "node-a" });
    try {
      await until(
        () => api.requests.some((r) => r.resource === "pods" && r.kind === "watch"),
        10_000,
        "the Pod watch",
      );
      const posted = api.nextEventCall((c) => c.method === "POST");
      api.apply(udpSlice("dns-a", "dns", 53, ["10.9.0.2", "10.9.0.3"]));
      await terminator.waitForBatches(1);
      assert.equal((await posted).answer, "ok");
      const patched = api.nextEventCall((c) => c.method === "PATCH");
      api.apply(udpSlice("dns-a", "dns", 53, ["10.9.0.3"]));
      assert.equal((await patched).answer, "ok");
      const resumed = api.next("watch");
      api.dropConnections();
      await resumed;
      const relisted = api.next("list");
      api.compact();
      api.expireWatches();
      await relisted;
      await api.next("watch");
    } finally {
      await t.stop();
    }
    return new Set(api.calls.map(rbacRequest));
  } finally {
    await api.close();
    await dir.remove();
  }
}

/** A request as RBAC sees it (kube-apiserver's RequestInfo): "VERB GROUP/RESOURCE". */
function rbacRequest({ method, url }: HttpCall): string {
  const parts = url.pathname.split("/").filter((p) => p !== "");
  const [group, rest] = parts[0] === "api" ? ["", parts.slice(2)] : [parts[1]!, parts.slice(3)];
  const [resource, name] = rest[0] === "namespaces" && rest.length > 2 ? rest.slice(2) : rest;
  const watch = ["true", "1"].includes(url.searchParams.get("watch") ?? "");
  const verbs: Record<string, string> = {
    GET: name !== undefined ? "get" : watch ? "watch" : "list",
    POST: "create",
    PUT: "update",
    PATCH: "patch",
    DELETE: name !== undefined ? "delete" : "deletecollection",
  };
  return `${verbs[method] ?? method} ${group}/${resource}`;
}

const haveKubectl = spawnSync("kubectl", ["version", "--client"]).error === undefined;
if (!haveKubectl && process.env.CI !== "true")
  process.stderr.write("\n*** deploy/ tests skipped: no kubectl (Debian package kubernetes-client) ***\n\n");

(haveKubectl || process.env.CI === "true" ? describe : describe.skip)("deploy/ (kubectl kustomize)", () => {
  const objects = haveKubectl ? kustomize(DEPLOY) : [];
  /** The client library's model instances as plain data, for deepEqual. */
  const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
  const one = <T>(kind: string): T => {
    const found = objects.filter((o) => o.kind === kind);
    assert.equal(found.length, 1, `one ${kind}`);
    return found[0] as T;
  };

  test("renders", () => {
    assert.deepEqual(objects.map((o) => o.kind).sort(), [
      "ClusterRole",
      "ClusterRoleBinding",
      "DaemonSet",
      "ServiceAccount",
    ]);
  });

  const ds = () => one<V1DaemonSet>("DaemonSet");
  const pod = () => ds().spec!.template.spec!;
  const container = () => {
    assert.equal(pod().containers.length, 1);
    return pod().containers[0]!;
  };
  const env = () => container().env ?? [];
  const envValue = (name: string) => env().find((e) => e.name === name)?.value;

  test("namespace and image are set once, in kustomization.yaml; the tag is the agent's version", () => {
    for (const kind of ["ServiceAccount", "DaemonSet"])
      assert.equal(one<Rendered>(kind).metadata?.namespace, "kube-system", kind);
    for (const file of ["rbac.yaml", "daemonset.yaml"])
      assert.doesNotMatch(read(file), /^\s*namespace:/m, file);
    assert.equal(container().image, `sockdiag-agent:${agentVersion}`);
    assert.match(read("daemonset.yaml"), /^\s*image: sockdiag-agent$/m, "no tag in daemonset.yaml");
  });

  test("DaemonSet: host PID and network, every node, the capabilities the agent needs, seccomp", () => {
    assert.equal(pod().hostPID, true);
    assert.equal(pod().hostNetwork, true);
    assert.deepEqual(plain(pod().tolerations), [{ operator: "Exists" }]);
    const caps = container().securityContext?.capabilities?.add ?? [];
    for (const cap of ["NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE"]) assert.ok(caps.includes(cap), cap);
    assert.equal(container().securityContext?.privileged ?? false, false);
    assert.equal(pod().securityContext?.seccompProfile?.type, "RuntimeDefault");
    assert.deepEqual(plain(ds().spec!.selector.matchLabels), plain(ds().spec!.template.metadata!.labels));
  });

  test("the host's /run mounted once, read-only, HostToContainer; the pin directories are the agent's defaults under it", () => {
    const volumes = new Map((pod().volumes ?? []).map((v) => [v.name, v]));
    const mounts = container().volumeMounts ?? [];
    const runs = mounts.filter((m) => volumes.get(m.name)?.hostPath?.path === "/run");
    assert.equal(runs.length, 1, "one mount of the host's /run");
    const [run] = runs;
    assert.equal(volumes.get(run!.name)?.hostPath?.type, "Directory", "a /run that exists, made by nothing");
    assert.equal(run!.readOnly, true);
    assert.equal(run!.mountPropagation, "HostToContainer");
    // Not over the container's own /run: the service account token is mounted at /var/run/secrets.
    assert.doesNotMatch(run!.mountPath, /^\/(var\/)?run(\/|$)/);
    const underRun = DEFAULT_NETNS_DIRS.map((dir) => {
      const inRun = /^\/(?:var\/)?run\/(.+)$/.exec(dir);
      assert.ok(inRun, `the default pin directory ${dir} is under /run`);
      return join(run!.mountPath, inRun[1]!);
    });
    const env = { SOCKDIAG_AGENT_NETNS_DIRS: envValue("SOCKDIAG_AGENT_NETNS_DIRS") };
    const parsed = parseOptions([], env);
    assert.ok("run" in parsed);
    assert.deepEqual(parsed.run.netnsDirs, underRun);
  });

  test("no hostPath volume makes a directory on the node but the agent's own state directory", () => {
    const made = (pod().volumes ?? []).filter((v) => v.hostPath && v.hostPath.type !== "Directory");
    assert.deepEqual(
      made.map((v) => [v.hostPath?.path, v.hostPath?.type]),
      [[envValue("SOCKDIAG_AGENT_STATE_DIR"), "DirectoryOrCreate"]],
    );
  });

  test("the state dir on a hostPath, writable", () => {
    const volumes = new Map((pod().volumes ?? []).map((v) => [v.name, v]));
    const mounts = container().volumeMounts ?? [];
    const stateDir = envValue("SOCKDIAG_AGENT_STATE_DIR");
    assert.ok(stateDir);
    const state = mounts.find((m) => m.mountPath === stateDir);
    assert.ok(state, "the state dir is mounted");
    assert.notEqual(state.readOnly, true);
    assert.equal(volumes.get(state.name)?.hostPath?.type, "DirectoryOrCreate");
  });

  test("states the one pass's mode (auto), and allows it: SYS_ADMIN, the host's PID namespace", () => {
    const value = envValue("SOCKDIAG_AGENT_ONE_PASS");
    assert.equal(value, "auto");
    const parsed = parseOptions([], { SOCKDIAG_AGENT_ONE_PASS: value });
    assert.ok("run" in parsed);
    assert.equal(parsed.run.onePass, "auto");
    assert.equal(pod().hostPID, true);
    assert.ok(container().securityContext?.capabilities?.add?.includes("SYS_ADMIN"));
  });

  test("knows its node's name (downward API spec.nodeName): it watches the node's Pods and reports Events", () => {
    const node = env().find((e) => e.name === "SOCKDIAG_AGENT_NODE_NAME");
    assert.equal(node?.valueFrom?.fieldRef?.fieldPath, "spec.nodeName");
  });

  test("listens on the node's own address (downward API status.hostIP), IPv4 and IPv6 alike", () => {
    const names = env().map((e) => e.name);
    const hostIp = env().find((e) => e.name === "HOST_IP");
    assert.equal(hostIp?.valueFrom?.fieldRef?.fieldPath, "status.hostIP");
    // $(HOST_IP) is expanded only when HOST_IP comes before the variable that uses it.
    assert.ok(names.indexOf("HOST_IP") < names.indexOf("SOCKDIAG_AGENT_LISTEN"));
    const listen = envValue("SOCKDIAG_AGENT_LISTEN")!;
    assert.match(listen, /^\[\$\(HOST_IP\)\]:\d+$/);
    for (const ip of ["10.0.0.7", "fd00::7"]) {
      const command = parseOptions([], { SOCKDIAG_AGENT_LISTEN: listen.replace("$(HOST_IP)", ip) });
      assert.ok("run" in command);
      assert.deepEqual(command.run.listen, { host: ip, port: 9813 });
    }
  });

  test("the metrics port is named; probes and scrape annotations follow the listen address", () => {
    const port = Number(/:(\d+)$/.exec(envValue("SOCKDIAG_AGENT_LISTEN")!)![1]);
    assert.deepEqual(plain(container().ports), [{ name: "metrics", containerPort: port, protocol: "TCP" }]);
    const { livenessProbe, readinessProbe } = container();
    assert.equal(livenessProbe?.httpGet?.path, "/healthz");
    assert.equal(readinessProbe?.httpGet?.path, "/readyz");
    for (const probe of [livenessProbe!, readinessProbe!]) {
      assert.equal(probe.httpGet!.port, "metrics");
      // No host: kubelet asks the pod IP, under hostNetwork the node's, where the agent listens.
      assert.equal(probe.httpGet!.host, undefined);
    }
    assert.deepEqual(plain(ds().spec!.template.metadata!.annotations), {
      "prometheus.io/scrape": "true",
      "prometheus.io/port": String(port),
      "prometheus.io/path": "/metrics",
    });
  });

  test("daemonset.yaml says which probe is which, and where the resources come from", () => {
    const source = read("daemonset.yaml");
    assert.match(source, /# Liveness, \/healthz: [^\n]*\n(\s*#[^\n]*\n)*\s*livenessProbe:/);
    assert.match(source, /# Readiness, \/readyz: [^\n]*\n(\s*#[^\n]*\n)*\s*readinessProbe:/);
    assert.match(source, /npm run bench -w sockdiag-agent[^\n]*\n(\s*#[^\n]*\n)*\s*resources:/);
    const { requests, limits } = container().resources!;
    assert.ok(requests?.cpu && requests.memory && limits?.memory);
    assert.equal(limits.cpu, undefined, "no CPU limit: a throttled agent is a late one");
  });

  test("V8's heap is sized for the memory limit: NODE_OPTIONS' old-space limit is the container's", () => {
    const options = envValue("NODE_OPTIONS") ?? "";
    const limit = container().resources!.limits!.memory as string;
    assert.match(limit, /^\d+Mi$/, "the limit in Mi");
    assert.match(options, new RegExp(`(^| )--max-old-space-size=${Number.parseInt(limit, 10)}( |$)`));
    assert.match(options, /(^| )--max-semi-space-size=\d+( |$)/);
  });

  test("glibc keeps one malloc arena, not one per helper thread, as the agent bench measures it", () => {
    assert.equal(envValue("MALLOC_ARENA_MAX"), "1");
  });

  test("RBAC: the service account may do what the agent asks of the API server, nothing more", async () => {
    const sa = one<V1ServiceAccount>("ServiceAccount");
    const role = one<V1ClusterRole>("ClusterRole");
    const binding = one<V1ClusterRoleBinding>("ClusterRoleBinding");
    assert.equal(pod().serviceAccountName, sa.metadata!.name);
    const granted = role.rules!.flatMap((r) =>
      r.apiGroups!.flatMap((group) =>
        r.resources!.flatMap((resource) => r.verbs.map((verb) => `${verb} ${group}/${resource}`)),
      ),
    );
    assert.deepEqual([...granted].sort(), [...(await requestsOfAnAgent())].sort());
    assert.deepEqual(plain(binding.roleRef), {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata!.name,
    });
    assert.deepEqual(plain(binding.subjects), [
      { kind: "ServiceAccount", name: sa.metadata!.name, namespace: sa.metadata!.namespace },
    ]);
  });

  test("the Dockerfile's stages start from one base image pinned by digest", () => {
    const froms = [...read("Dockerfile").matchAll(/^FROM\s+(\S+)/gm)].map((m) => m[1]);
    assert.equal(froms.length, 2);
    for (const image of froms) assert.match(image!, /^node:24-bookworm-slim@sha256:[0-9a-f]{64}$/);
    assert.equal(froms[0], froms[1]);
  });

  test("the agent's image pinned by digest, as kustomization.yaml's comment shows it", () => {
    const copy = mkdtempSync(join(tmpdir(), "sockdiag-agent-deploy-"));
    try {
      cpSync(DEPLOY, copy, { recursive: true });
      const base = read("kustomization.yaml");
      const example = /^ {2}# {3}- name: sockdiag-agent\n(?: {2}# {5}\S.*\n)+/m.exec(base)?.[0];
      assert.ok(example, "kustomization.yaml shows an images entry with a digest");
      const entry = example.replaceAll("  #   ", "  ");
      const digest = /^ {4}digest: (sha256:[0-9a-f]{64})$/m.exec(entry)?.[1];
      assert.ok(digest, entry);
      const pinned = base.replace(/^images:\n(?:(?: {2}#.*| {2}- .*| {4}.*)\n)+/m, `images:\n${entry}`);
      assert.notEqual(pinned, base);
      writeFileSync(join(copy, "kustomization.yaml"), pinned);
      const ds = kustomize(copy).find((o) => o.kind === "DaemonSet") as V1DaemonSet | undefined;
      assert.equal(ds?.spec?.template.spec?.containers[0]?.image, `REGISTRY/sockdiag-agent@${digest}`);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });

  test("the operator's components, as kustomization.yaml's comment enables them: a PodMonitor of the named port, the rules file's alerts", () => {
    const copy = mkdtempSync(join(tmpdir(), "sockdiag-agent-deploy-"));
    try {
      cpSync(DEPLOY, copy, { recursive: true });
      const base = read("kustomization.yaml");
      const enabled = base.replace(
        "# components:\n#   - podmonitor\n#   - prometheus-rule\n",
        "components:\n  - podmonitor\n  - prometheus-rule\n",
      );
      assert.notEqual(enabled, base, "kustomization.yaml holds the commented-out components");
      writeFileSync(join(copy, "kustomization.yaml"), enabled);
      const rendered = kustomize(copy);
      const monitors = rendered.filter((o) => o.kind === "PodMonitor") as (Rendered & {
        spec: { selector: { matchLabels: unknown }; podMetricsEndpoints: unknown };
      })[];
      assert.equal(monitors.length, 1);
      const [monitor] = monitors;
      assert.equal(monitor!.metadata?.namespace, "kube-system");
      assert.deepEqual(monitor!.spec.selector.matchLabels, plain(ds().spec!.template.metadata!.labels));
      assert.deepEqual(monitor!.spec.podMetricsEndpoints, [{ port: "metrics", path: "/metrics" }]);
      const ruleObjects = rendered.filter((o) => o.kind === "PrometheusRule") as (Rendered & {
        spec: unknown;
      })[];
      assert.equal(ruleObjects.length, 1);
      assert.equal(ruleObjects[0]!.metadata?.namespace, "kube-system");
      assert.deepEqual(ruleObjects[0]!.spec, loadYaml(read("prometheus/sockdiag-agent.rules.yaml")));
      assert.equal(rendered.length, objects.length + 2);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
  });
});
