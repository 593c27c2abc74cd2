/**
 * Which cluster the agent talks to, decided as kubectl would, in this order: `--kubeconfig` (or
 * SOCKDIAG_AGENT_KUBECONFIG), then KUBECONFIG (a ":"-separated list, merged as kubectl merges it),
 * then the in-cluster service account — only where KUBERNETES_SERVICE_HOST says the agent runs in a
 * pod. With none of them there is nothing to talk to: a ConfigError, never a loop against
 * "https://undefined:undefined".
 */
import { dirname, isAbsolute, resolve } from "node:path";
import { KubeConfig } from "@kubernetes/client-node";

/** No usable cluster configuration; the message says what was tried. Exit status 1. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
}

/** Where the configuration came from, for the start-up log line. */
export type ConfigSource = "kubeconfig" | "KUBECONFIG" | "in-cluster";

export function loadKubeConfig(
  file: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
): { kubeConfig: KubeConfig; source: ConfigSource } {
  const kc = new KubeConfig();
  let source: ConfigSource;
  try {
    if (file !== undefined) {
      loadFile(kc, file);
      source = "kubeconfig";
    } else if (env.KUBECONFIG) {
      const [first, ...rest] = env.KUBECONFIG.split(":").filter(Boolean);
      if (first === undefined) throw new ConfigError("KUBECONFIG names no file");
      loadFile(kc, first);
      // The first file's current context wins, as kubectl merges.
      for (const path of rest) {
        const more = new KubeConfig();
        loadFile(more, path);
        kc.mergeConfig(more, true);
      }
      source = "KUBECONFIG";
    } else if (env.KUBERNETES_SERVICE_HOST) {
      kc.loadFromCluster();
      source = "in-cluster";
    } else {
      throw new ConfigError(
        "no Kubernetes configuration: give --kubeconfig FILE (or SOCKDIAG_AGENT_KUBECONFIG, or KUBECONFIG), or run in a pod (KUBERNETES_SERVICE_HOST)",
      );
    }
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError(`cannot load the Kubernetes configuration: ${(err as Error).message}`);
  }
  const server = kc.getCurrentCluster()?.server;
  if (!server || !/^https?:\/\/[^/]/.test(server) || server.includes("undefined"))
    throw new ConfigError(
      `the ${source} configuration names no API server URL (got ${JSON.stringify(server ?? "")})`,
    );
  return { kubeConfig: kc, source };
}

/**
 * Load one file; an exec plugin's command given as a relative path ("bin/plugin", not a bare
 * name looked up in PATH) is taken from the file's directory, as client-go resolves it.
 */
function loadFile(kc: KubeConfig, file: string): void {
  kc.loadFromFile(file);
  for (const user of kc.users) {
    const exec = user.exec as { command?: unknown } | null | undefined;
    if (typeof exec?.command === "string" && exec.command.includes("/") && !isAbsolute(exec.command))
      exec.command = resolve(dirname(file), exec.command);
  }
}
