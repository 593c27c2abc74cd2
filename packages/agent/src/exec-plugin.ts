/**
 * The kubeconfig's `exec` credential plugin, run once as client-go's exec authenticator runs it
 * (plugin/pkg/client/auth/exec/exec.go, the `client.authentication.k8s.io` v1 and v1beta1
 * protocol): the command with its args, the agent's environment with the plugin's `env` over it
 * and `KUBERNETES_EXEC_INFO` holding an ExecCredential whose `spec.interactive` is false, no
 * stdin; its stdout read as an ExecCredential (a token, or a client certificate and key, and an
 * optional `expirationTimestamp`).
 *
 * Unlike client-go, the run is bounded: it is killed (its whole process group, so a shell's
 * children go too) when it outlasts its timeout, writes more than it may, or the caller gives up;
 * and its output is untrusted: bounded, parsed, and checked field by field.
 */
import { spawn } from "node:child_process";
import { createPrivateKey, X509Certificate } from "node:crypto";
import { access, constants, realpath, stat } from "node:fs/promises";
import { isAbsolute, join, resolve, sep } from "node:path";
import { ConfigError } from "./kubeconfig.js";

const EXEC_API_VERSIONS = [
  "client.authentication.k8s.io/v1",
  "client.authentication.k8s.io/v1beta1",
] as const;
export type ExecApiVersion = (typeof EXEC_API_VERSIONS)[number];

/** A kubeconfig user's `exec` section, checked. */
export interface ExecPluginConfig {
  apiVersion: ExecApiVersion;
  command: string;
  args: readonly string[];
  env: readonly { name: string; value: string }[];
  provideClusterInfo: boolean;
  installHint: string | undefined;
}

/** What `provideClusterInfo` hands the plugin (ExecCredential `spec.cluster`). */
export interface ExecClusterInfo {
  server: string;
  "tls-server-name"?: string;
  "insecure-skip-tls-verify"?: boolean;
  "certificate-authority-data"?: string;
  "proxy-url"?: string;
}

/** A credential the plugin gave: a token, a client certificate and key, or both. */
export interface ExecCredential {
  token: string | undefined;
  cert: string | undefined;
  key: string | undefined;
  /** `status.expirationTimestamp` in epoch milliseconds; undefined: valid until the server says 401. */
  expiresAt: number | undefined;
}

/**
 * How a run failed: "timeout" (killed for taking too long), "failed" (could not start, or exited
 * with an error), "invalid" (its output is not a usable ExecCredential; the message names the field).
 */
export type ExecFailure = "timeout" | "failed" | "invalid";

export class ExecPluginError extends Error {
  override readonly name = "ExecPluginError";
  /** The plugin's pid, when it ran. */
  pid: number | undefined;
  constructor(
    readonly outcome: ExecFailure,
    message: string,
    /** The end of what the plugin wrote to stderr, when it wrote something. */
    readonly stderr?: string,
  ) {
    super(message);
  }
}

/** The most a plugin may write to stdout: an ExecCredential with a certificate chain is a few kB. */
export const MAX_STDOUT_BYTES = 1024 * 1024;
/** How much of the plugin's stderr is kept for the error it explains. */
const STDERR_TAIL_BYTES = 2048;

/**
 * The `exec` section of kubeconfig user `user`, checked as client-go's clientcmd validates it;
 * throws ConfigError naming the field. `interactiveMode` is required for v1 (v1beta1 defaults it to
 * IfAvailable); the agent never has a terminal, so Never and IfAvailable both run the plugin without
 * stdin, and Always is refused here rather than at every request.
 */
export function execPluginConfig(raw: unknown, user: string): ExecPluginConfig {
  const where = (field: string) => `user "${user}": exec.${field}`;
  if (typeof raw !== "object" || raw === null || Array.isArray(raw))
    throw new ConfigError(`user "${user}": exec must be a mapping`);
  const exec = raw as Record<string, unknown>;
  const apiVersion = exec.apiVersion;
  if (!EXEC_API_VERSIONS.includes(apiVersion as ExecApiVersion))
    throw new ConfigError(
      `${where("apiVersion")}: ${JSON.stringify(apiVersion ?? null)} is not one of ${EXEC_API_VERSIONS.join(", ")}`,
    );
  // No string may hold a NUL: it cannot be passed to execve().
  const text = (v: unknown): v is string => typeof v === "string" && !v.includes("\0");
  if (!text(exec.command) || exec.command === "")
    throw new ConfigError(`${where("command")}: a non-empty string is required`);
  const args = exec.args ?? [];
  if (!Array.isArray(args) || !args.every(text))
    throw new ConfigError(`${where("args")}: a list of strings is required`);
  const env = exec.env ?? [];
  if (!Array.isArray(env)) throw new ConfigError(`${where("env")}: a list of {name, value} is required`);
  env.forEach((e: unknown, i) => {
    const { name, value } = (typeof e === "object" && e !== null ? e : {}) as Record<string, unknown>;
    if (!text(name) || name === "" || name.includes("=") || !text(value))
      throw new ConfigError(`${where(`env[${i}]`)}: a name (no "=") and a string value are required`);
  });
  const mode =
    exec.interactiveMode ?? (apiVersion === "client.authentication.k8s.io/v1" ? undefined : "IfAvailable");
  if (mode === undefined) throw new ConfigError(`${where("interactiveMode")}: required for ${apiVersion}`);
  if (mode === "Always")
    throw new ConfigError(
      `${where("interactiveMode")}: Always needs a terminal, and the agent runs without one`,
    );
  if (mode !== "Never" && mode !== "IfAvailable")
    throw new ConfigError(
      `${where("interactiveMode")}: ${JSON.stringify(mode)} is not Never, IfAvailable or Always`,
    );
  if (exec.provideClusterInfo !== undefined && typeof exec.provideClusterInfo !== "boolean")
    throw new ConfigError(`${where("provideClusterInfo")}: true or false`);
  return {
    apiVersion: apiVersion as ExecApiVersion,
    command: exec.command,
    args,
    env: env as { name: string; value: string }[],
    provideClusterInfo: exec.provideClusterInfo === true,
    installHint: typeof exec.installHint === "string" ? exec.installHint : undefined,
  };
}

export interface ExecRunOptions {
  /** The environment the plugin's `env` goes over (the agent's). */
  env: NodeJS.ProcessEnv;
  /** Given to the plugin when the config asks for it (`provideClusterInfo`). */
  cluster: ExecClusterInfo | undefined;
  /** The run is killed after this long. */
  timeoutMs: number;
  /** Aborting kills the run; the promise rejects with the signal's reason. */
  signal: AbortSignal;
}

/** One finished run: the credential, and the plugin's pid (for logs). */
export interface ExecRun {
  credential: ExecCredential;
  pid: number;
}

/**
 * Run the plugin once. Rejects with ExecPluginError when it cannot start, fails, times out or
 * answers something unusable, and with the signal's reason when aborted. The plugin has been
 * reaped before the promise settles, and when it was stopped (timeout, abort, too much output),
 * its whole process group has been sent SIGKILL.
 */
export async function runExecPlugin(config: ExecPluginConfig, options: ExecRunOptions): Promise<ExecRun> {
  options.signal.throwIfAborted();
  const env: NodeJS.ProcessEnv = { ...options.env };
  for (const { name, value } of config.env) env[name] = value;
  env.KUBERNETES_EXEC_INFO = JSON.stringify(execInfo(config, options.cluster));
  const command = await trustedCommand(config, env.PATH);
  options.signal.throwIfAborted();
  const { stdout, pid } = await collect(command, config.args, env, options);
  try {
    return { credential: parseExecCredential(stdout, config.apiVersion), pid };
  } catch (err) {
    if (err instanceof ExecPluginError) err.pid = pid;
    throw err;
  }
}

/** The ExecCredential handed to the plugin in KUBERNETES_EXEC_INFO. */
function execInfo(config: ExecPluginConfig, cluster: ExecClusterInfo | undefined): unknown {
  return {
    apiVersion: config.apiVersion,
    kind: "ExecCredential",
    spec: { interactive: false, ...(config.provideClusterInfo && cluster ? { cluster } : {}) },
  };
}

/**
 * Spawn the plugin in its own process group and gather its stdout, killing the group on timeout,
 * abort or too much output. Settles once the plugin has exited and its pipes are done.
 */
function collect(
  command: string,
  args: readonly string[],
  env: NodeJS.ProcessEnv,
  options: ExecRunOptions,
): Promise<{ stdout: string; pid: number }> {
  return new Promise((resolvePromise, reject) => {
    // detached: setsid(), so the plugin leads a process group that one kill reaches whole.
    const child = spawn(command, args, { env, stdio: ["ignore", "pipe", "pipe"], detached: true });
    const out: Buffer[] = [];
    let outBytes = 0;
    let errTail = Buffer.alloc(0);
    let failure: unknown;
    let settled = false;
    const stderrText = () => errTail.toString("utf8").trim() || undefined;
    const killGroup = () => {
      if (child.pid === undefined) return;
      try {
        process.kill(-child.pid, "SIGKILL");
      } catch {
        // The group is gone already.
      }
    };
    const finish = () => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      options.signal.removeEventListener("abort", onAbort);
      process.removeListener("exit", killGroup);
      child.stdout.destroy();
      child.stderr.destroy();
      if (failure instanceof ExecPluginError) failure.pid = child.pid;
      if (failure !== undefined) return reject(failure);
      if (child.exitCode !== 0) {
        const how =
          child.exitCode === null
            ? `was killed by ${child.signalCode}`
            : `exited with status ${child.exitCode}`;
        const detail = stderrText();
        const err = new ExecPluginError(
          "failed",
          `the exec plugin ${how}${detail ? `: ${detail}` : ""}`,
          detail,
        );
        err.pid = child.pid;
        return reject(err);
      }
      resolvePromise({ stdout: Buffer.concat(out).toString("utf8"), pid: child.pid ?? 0 });
    };
    // Stop the run; once it has exited, what it left holding its pipes cannot keep the promise open.
    const stop = (why: unknown) => {
      failure ??= why;
      killGroup();
      if (child.exitCode !== null || child.signalCode !== null) finish();
    };
    const onAbort = () => stop(options.signal.reason);
    const timer = setTimeout(
      () =>
        stop(
          new ExecPluginError(
            "timeout",
            `the exec plugin did not answer within ${options.timeoutMs / 1000} s; killed`,
            stderrText(),
          ),
        ),
      options.timeoutMs,
    );
    options.signal.addEventListener("abort", onAbort, { once: true });
    // Should the agent exit while the plugin runs, the plugin goes with it.
    process.once("exit", killGroup);
    child.stdout.on("data", (chunk: Buffer) => {
      outBytes += chunk.length;
      if (outBytes > MAX_STDOUT_BYTES)
        return stop(
          new ExecPluginError(
            "invalid",
            `the exec plugin wrote more than ${MAX_STDOUT_BYTES} bytes to stdout; killed`,
          ),
        );
      out.push(chunk);
    });
    child.stderr.on("data", (chunk: Buffer) => {
      errTail = Buffer.concat([errTail, chunk]);
      if (errTail.length > STDERR_TAIL_BYTES) errTail = errTail.subarray(errTail.length - STDERR_TAIL_BYTES);
    });
    child.once("error", (err) => {
      failure ??= new ExecPluginError("failed", `the exec plugin ${command} could not start: ${err.message}`);
      finish();
    });
    child.once("exit", () => {
      if (failure !== undefined) finish();
    });
    child.once("close", finish);
  });
}

/**
 * The plugin's ExecCredential from its stdout, checked as client-go checks it (the apiVersion the
 * kubeconfig asked for, a status with a token or a certificate and key) and more strictly: each
 * field's type, a token fit for an HTTP header, a certificate and key that parse and match, an
 * RFC 3339 expirationTimestamp.
 */
export function parseExecCredential(stdout: string, apiVersion: ExecApiVersion): ExecCredential {
  const invalid = (message: string) =>
    new ExecPluginError("invalid", `the exec plugin's ExecCredential: ${message}`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(stdout);
  } catch (err) {
    throw invalid(`stdout is not JSON (${(err as Error).message})`);
  }
  if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed))
    throw invalid("stdout is not an object");
  const o = parsed as Record<string, unknown>;
  if (o.apiVersion !== apiVersion)
    throw invalid(
      `apiVersion ${JSON.stringify(o.apiVersion ?? null)}, but the kubeconfig asks for ${apiVersion}`,
    );
  if (o.kind !== "ExecCredential")
    throw invalid(`kind ${JSON.stringify(o.kind ?? null)} is not ExecCredential`);
  if (typeof o.status !== "object" || o.status === null || Array.isArray(o.status))
    throw invalid("status is missing or not an object");
  const status = o.status as Record<string, unknown>;
  const text = (field: string): string | undefined => {
    const v = status[field];
    if (v === undefined || v === null || v === "") return undefined;
    if (typeof v !== "string") throw invalid(`status.${field} is not a string`);
    return v;
  };
  const token = text("token");
  const cert = text("clientCertificateData");
  const key = text("clientKeyData");
  if (token === undefined && cert === undefined && key === undefined)
    throw invalid("status has no token and no clientCertificateData/clientKeyData");
  if ((cert === undefined) !== (key === undefined))
    throw invalid("status has only one of clientCertificateData and clientKeyData");
  // A header value: visible ASCII and spaces, nothing that could end the header.
  if (token !== undefined && !/^[\x20-\x7e]+$/.test(token))
    throw invalid("status.token holds characters an Authorization header cannot carry");
  if (cert !== undefined && key !== undefined) checkKeyPair(cert, key, invalid);
  const expiry = text("expirationTimestamp");
  let expiresAt: number | undefined;
  if (expiry !== undefined) {
    expiresAt = RFC3339.test(expiry) ? Date.parse(expiry) : Number.NaN;
    if (Number.isNaN(expiresAt))
      throw invalid(`status.expirationTimestamp ${JSON.stringify(expiry)} is not RFC 3339`);
  }
  return { token, cert, key, expiresAt };
}

const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)$/i;

function checkKeyPair(cert: string, key: string, invalid: (message: string) => Error): void {
  let x509: X509Certificate;
  try {
    x509 = new X509Certificate(cert);
  } catch (err) {
    throw invalid(`status.clientCertificateData is not a PEM certificate (${(err as Error).message})`);
  }
  let privateKey: ReturnType<typeof createPrivateKey>;
  try {
    privateKey = createPrivateKey(key);
  } catch (err) {
    throw invalid(`status.clientKeyData is not a PEM private key (${(err as Error).message})`);
  }
  if (!x509.checkPrivateKey(privateKey))
    throw invalid("status.clientKeyData is not the key of status.clientCertificateData");
}

/**
 * The plugin's executable, found as execvp would (a bare name through PATH's absolute entries),
 * and refused unless every directory on its real path and the file itself are owned by root or by
 * the agent's user and writable by no one else (a sticky directory, as /tmp, protects what it
 * holds): the agent runs it as root.
 */
async function trustedCommand(config: ExecPluginConfig, path: string | undefined): Promise<string> {
  const notFound = () =>
    new ExecPluginError(
      "failed",
      `the exec plugin ${config.command} was not found${config.installHint ? `: ${config.installHint}` : ""}`,
    );
  let found: string | undefined;
  if (config.command.includes("/")) found = resolve(config.command);
  else {
    for (const dir of (path ?? "").split(":")) {
      if (!isAbsolute(dir)) continue;
      const candidate = join(dir, config.command);
      if (
        await access(candidate, constants.X_OK).then(
          () => true,
          () => false,
        )
      ) {
        found = candidate;
        break;
      }
    }
  }
  if (found === undefined) throw notFound();
  const real = await realpath(found).catch(() => {
    throw notFound();
  });
  const euid = process.geteuid?.() ?? 0;
  const parts = real.split(sep).filter(Boolean);
  for (let i = 0; i <= parts.length; i++) {
    const at = `/${parts.slice(0, i).join("/")}`;
    const st = await stat(at);
    const sticky = st.isDirectory() && (st.mode & 0o1000) !== 0;
    let why: string | undefined;
    if (st.uid !== 0 && st.uid !== euid) why = `is owned by uid ${st.uid}`;
    else if ((st.mode & 0o022) !== 0 && !sticky)
      why = `is writable by group or others (mode ${(st.mode & 0o7777).toString(8)})`;
    if (why) throw new ExecPluginError("failed", `the exec plugin ${real} is not run: ${at} ${why}`);
  }
  return real;
}
