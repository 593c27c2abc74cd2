/**
 * The manifests in deploy/, loaded as Kubernetes objects by the client library (a field it does not
 * know is dropped, so a misspelt field fails here), checked against what the agent needs on a node.
 */
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { describe, test } from "node:test";
import {
  loadAllYaml,
  type V1ClusterRole,
  type V1ClusterRoleBinding,
  type V1DaemonSet,
  type V1ServiceAccount,
} from "@kubernetes/client-node";
import { DEFAULT_NETNS_DIRS } from "../src/options.js";

const deploy = new URL("../../../../deploy/", import.meta.url);
const read = (name: string) => readFileSync(new URL(name, deploy), "utf8");
const objects = [...loadAllYaml(read("rbac.yaml")), ...loadAllYaml(read("daemonset.yaml"))] as {
  kind: string;
}[];
/** The client library's model instances as plain data, for deepEqual. */
const plain = (value: unknown): unknown => JSON.parse(JSON.stringify(value));
const one = <T>(kind: string): T => {
  const found = objects.filter((o) => o.kind === kind);
  assert.equal(found.length, 1, `one ${kind}`);
  return found[0] as T;
};

describe("deploy/ manifests", () => {
  const ds = one<V1DaemonSet>("DaemonSet");
  const pod = ds.spec!.template.spec!;
  const container = pod.containers[0]!;
  const env = new Map((container.env ?? []).map((e) => [e.name, e.value]));

  test("DaemonSet: host PID and network, every node, the capabilities the agent needs", () => {
    assert.equal(pod.hostPID, true);
    assert.equal(pod.hostNetwork, true);
    assert.deepEqual(plain(pod.tolerations), [{ operator: "Exists" }]);
    assert.equal(pod.containers.length, 1);
    const caps = container.securityContext?.capabilities?.add ?? [];
    for (const cap of ["NET_ADMIN", "SYS_ADMIN", "SYS_PTRACE"]) assert.ok(caps.includes(cap), cap);
    assert.equal(container.securityContext?.privileged ?? false, false);
    assert.deepEqual(plain(ds.spec!.selector.matchLabels), plain(ds.spec!.template.metadata!.labels));
  });

  test("pin directories mounted with HostToContainer propagation; the state dir on a hostPath", () => {
    const volumes = new Map((pod.volumes ?? []).map((v) => [v.name, v]));
    const mounts = container.volumeMounts ?? [];
    for (const dir of DEFAULT_NETNS_DIRS) {
      const mount = mounts.find((m) => m.mountPath === dir);
      assert.ok(mount, `${dir} is mounted`);
      assert.equal(mount.mountPropagation, "HostToContainer", dir);
      assert.equal(volumes.get(mount.name)?.hostPath?.path, dir);
    }
    const stateDir = env.get("SOCKDIAG_AGENT_STATE_DIR");
    assert.ok(stateDir);
    const state = mounts.find((m) => m.mountPath === stateDir);
    assert.ok(state, "the state dir is mounted");
    assert.notEqual(state.readOnly, true);
    assert.equal(volumes.get(state.name)?.hostPath?.type, "DirectoryOrCreate");
  });

  test("probes: /healthz and /readyz on the address the agent listens on", () => {
    const [host, port] = (env.get("SOCKDIAG_AGENT_LISTEN") ?? "").split(":");
    assert.equal(container.livenessProbe?.httpGet?.path, "/healthz");
    assert.equal(container.readinessProbe?.httpGet?.path, "/readyz");
    for (const probe of [container.livenessProbe!, container.readinessProbe!]) {
      assert.equal(String(probe.httpGet!.port), port);
      assert.equal(probe.httpGet!.host, host);
    }
  });

  test("RBAC: the service account may get, list and watch EndpointSlices, nothing more", () => {
    const sa = one<V1ServiceAccount>("ServiceAccount");
    const role = one<V1ClusterRole>("ClusterRole");
    const binding = one<V1ClusterRoleBinding>("ClusterRoleBinding");
    assert.equal(pod.serviceAccountName, sa.metadata!.name);
    assert.equal(sa.metadata!.namespace, ds.metadata!.namespace);
    assert.deepEqual(
      role.rules!.map((r) => ({
        apiGroups: r.apiGroups,
        resources: r.resources,
        verbs: [...r.verbs].sort(),
      })),
      [{ apiGroups: ["discovery.k8s.io"], resources: ["endpointslices"], verbs: ["get", "list", "watch"] }],
    );
    assert.deepEqual(plain(binding.roleRef), {
      apiGroup: "rbac.authorization.k8s.io",
      kind: "ClusterRole",
      name: role.metadata!.name,
    });
    assert.deepEqual(plain(binding.subjects), [
      { kind: "ServiceAccount", name: sa.metadata!.name, namespace: sa.metadata!.namespace },
    ]);
  });

  test("Dockerfile: runs the agent's bin on the Node version CI tests", () => {
    const dockerfile = read("Dockerfile");
    const pkg = JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as {
      bin: Record<string, string>;
    };
    const bin = pkg.bin["sockdiag-agent"]!.replace(/^\.\//, "");
    assert.match(
      dockerfile,
      new RegExp(`ENTRYPOINT \\["node", "/app/packages/agent/${bin.replace(/\./g, "\\.")}"\\]`),
    );
    assert.match(dockerfile, /^FROM node:20-/m);
    assert.match(dockerfile, /npm ci --no-audit --no-fund/);
    assert.doesNotMatch(
      dockerfile,
      /--omit=optional|--no-optional/,
      "koffi's binary comes through an optional dependency",
    );
  });
});
