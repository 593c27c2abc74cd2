/**
 * RequestAuth: what each request to the API server carries to authenticate — headers and the
 * HTTP(S) agent with the cluster's TLS settings and a client certificate — from the KubeConfig.
 *
 * The client library applies everything but an `exec` user; the agent runs that plugin itself
 * (ExecCredentials), since the library's exec authenticator cannot be given up: it spawns the
 * plugin with no timeout and no abort, and a plugin that hangs would stop every request for good.
 * As in client-go, the plugin is used only when the user has no token, password or certificate.
 * Whatever the library does besides (its older auth providers) is waited for only as long as the
 * request's signal allows.
 */
import type { Agent as HttpAgent } from "node:http";
import { bufferFromFileOrString, KubeConfig, type User } from "@kubernetes/client-node";
import { ExecCredentials, type ExecCredentialsOptions, untilAborted } from "./exec-credential.js";
import { type ExecClusterInfo, execPluginConfig } from "./exec-plugin.js";

/** What one request sends; `unauthorized()` when the server answered it 401. */
export interface RequestCredentials {
  headers: Record<string, string>;
  agent: HttpAgent | undefined;
  unauthorized(): void;
}

export class RequestAuth {
  /** The given configuration with the current user's `exec` taken out. */
  private readonly kubeConfig: KubeConfig;
  /** The exec plugin's credentials, when the current user is authenticated by one. */
  readonly exec: ExecCredentials | undefined;

  /** Throws ConfigError when the user's `exec` section is not usable (the message names the field). */
  constructor(kubeConfig: KubeConfig, options: Omit<ExecCredentialsOptions, "cluster"> = {}) {
    const user = kubeConfig.getCurrentUser();
    if (!user?.exec) {
      this.kubeConfig = kubeConfig;
      return;
    }
    this.kubeConfig = withoutExec(kubeConfig, user);
    if (user.token || user.username || user.certData || user.certFile) return;
    const config = execPluginConfig(user.exec, user.name);
    this.exec = new ExecCredentials(config, { ...options, cluster: clusterInfo(kubeConfig) });
  }

  /** The credentials of one request; rejects with the plugin's error, or the signal's reason. */
  async forRequest(signal: AbortSignal): Promise<RequestCredentials> {
    const credential = this.exec ? await this.exec.get(signal) : undefined;
    const base = credential?.cert ? { cert: credential.cert, key: credential.key } : {};
    const options = await untilAborted(this.kubeConfig.applyToFetchOptions(base), signal);
    const headers: Record<string, string> = {};
    // The library hands out node-fetch's Headers class.
    (options.headers as { forEach(f: (value: string, name: string) => void): void }).forEach(
      (value, name) => {
        headers[name] = value;
      },
    );
    if (credential?.token) headers.authorization = `Bearer ${credential.token}`;
    return {
      headers,
      agent: options.agent as HttpAgent | undefined,
      unauthorized: () => {
        if (credential) this.exec?.rejected(credential);
      },
    };
  }

  /** False while the exec plugin fails (true without one). */
  healthy(): boolean {
    return this.exec?.healthy() ?? true;
  }

  /** Kill a plugin run in progress and wait for it. */
  async close(): Promise<void> {
    await this.exec?.close();
  }
}

function withoutExec(kubeConfig: KubeConfig, user: User): KubeConfig {
  const copy = new KubeConfig();
  copy.loadFromOptions({
    clusters: kubeConfig.clusters,
    users: kubeConfig.users.map((u) => (u === user ? { ...u, exec: undefined } : u)),
    contexts: kubeConfig.contexts,
    currentContext: kubeConfig.currentContext,
  });
  return copy;
}

/** The current cluster as an ExecCredential's `spec.cluster` describes it. */
function clusterInfo(kubeConfig: KubeConfig): ExecClusterInfo | undefined {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) return undefined;
  const ca = bufferFromFileOrString(cluster.caFile, cluster.caData);
  return {
    server: cluster.server,
    ...(cluster.tlsServerName ? { "tls-server-name": cluster.tlsServerName } : {}),
    ...(cluster.skipTLSVerify ? { "insecure-skip-tls-verify": true } : {}),
    ...(ca ? { "certificate-authority-data": ca.toString("base64") } : {}),
    ...(cluster.proxyUrl ? { "proxy-url": cluster.proxyUrl } : {}),
  };
}
