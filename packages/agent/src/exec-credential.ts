/**
 * ExecCredentials: the credential of a kubeconfig `exec` user, kept as client-go's exec
 * authenticator keeps it: cached until its `expirationTimestamp` passes (for ever without one),
 * fetched again when the server answers 401 to it, one plugin run at a time shared by every
 * request that waits. Each run is bounded (exec-plugin.ts); a request that gives up stops waiting
 * without killing the run others may share, and `close()` (the agent's shutdown) kills it.
 */
import {
  type ExecClusterInfo,
  type ExecCredential,
  type ExecFailure,
  type ExecPluginConfig,
  ExecPluginError,
  runExecPlugin,
} from "./exec-plugin.js";

/** One plugin run as it ended, for metrics and logs. */
export interface ExecCall {
  outcome: "ok" | ExecFailure;
  pid: number | undefined;
  /** When the credential it gave expires (epoch ms), on success. */
  expiresAt?: number;
  error?: ExecPluginError;
}

export interface ExecCredentialsOptions {
  /** A run is killed after this long. Default 30,000. */
  timeoutMs?: number;
  /** The environment under the plugin's `env`; default process.env. */
  env?: NodeJS.ProcessEnv;
  /** Handed to the plugin when the config asks (`provideClusterInfo`). */
  cluster?: ExecClusterInfo;
  /** Wall-clock time in epoch ms, against which expiry is judged; default Date.now. */
  now?: () => number;
  /** Told of every run that ended (not of one killed by `close()`). */
  onCall?: (call: ExecCall) => void;
}

export class ExecCredentials {
  private readonly timeoutMs: number;
  private readonly now: () => number;
  private readonly closer = new AbortController();
  private cached: ExecCredential | undefined;
  private running: Promise<ExecCredential> | undefined;
  private failing = false;

  constructor(
    private readonly config: ExecPluginConfig,
    private readonly options: ExecCredentialsOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.now = options.now ?? Date.now;
  }

  /**
   * The credential to send: the cached one while it has not expired, else the one a plugin run
   * gives (a run already under way is joined). Rejects with ExecPluginError when the run fails, and
   * with `signal`'s reason as soon as it aborts.
   */
  get(signal: AbortSignal): Promise<ExecCredential> {
    if (signal.aborted) return Promise.reject(signal.reason);
    const cached = this.cached;
    if (cached && !(cached.expiresAt !== undefined && this.now() > cached.expiresAt))
      return Promise.resolve(cached);
    this.running ??= this.refresh().finally(() => {
      this.running = undefined;
    });
    return untilAborted(this.running, signal);
  }

  /** The server answered 401 to `credential`: the next request runs the plugin, unless it ran since. */
  rejected(credential: ExecCredential): void {
    if (this.cached === credential) this.cached = undefined;
  }

  /** False from a failed run until one succeeds. */
  healthy(): boolean {
    return !this.failing && !this.closer.signal.aborted;
  }

  /** Kill the run in progress, if any, and wait until it is reaped; no run starts after this. */
  async close(): Promise<void> {
    this.closer.abort();
    await this.running?.catch(() => undefined);
  }

  private async refresh(): Promise<ExecCredential> {
    const signal = this.closer.signal;
    try {
      const { credential, pid } = await runExecPlugin(this.config, {
        env: this.options.env ?? process.env,
        cluster: this.options.cluster,
        timeoutMs: this.timeoutMs,
        signal,
      });
      this.cached = credential;
      this.failing = false;
      this.options.onCall?.({
        outcome: "ok",
        pid,
        ...(credential.expiresAt ? { expiresAt: credential.expiresAt } : {}),
      });
      return credential;
    } catch (err) {
      if (err instanceof ExecPluginError) {
        this.failing = true;
        this.options.onCall?.({ outcome: err.outcome, pid: err.pid, error: err });
      }
      throw err;
    }
  }
}

/** `promise`, or the signal's reason as soon as it aborts (the promise itself runs on). */
export function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener("abort", onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener("abort", onAbort);
        resolve(value);
      },
      (err: unknown) => {
        signal.removeEventListener("abort", onAbort);
        reject(err);
      },
    );
  });
}
