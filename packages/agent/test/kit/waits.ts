/**
 * Bounded waits: every wait of a test ends, so a thing that never comes fails the test with a
 * message naming it instead of leaving its file running until CI's limit.
 */

/** The default bound of a wait for something to arrive: generous, since CI machines are loaded. */
export const ARRIVAL_TIMEOUT_MS = 20_000;

/**
 * Waits for something that arrives (a request, a log line, a call): `listen` starts listening and
 * returns how to stop; the promise settles as its `arrived` or `failed` is first called, or
 * rejects after `timeoutMs` naming `what` and what `meanwhile()` says came instead. The bound
 * starts now, since a test often arms a wait before the act that causes what it waits for. The
 * timer never keeps the process alive, and a wait armed but never awaited (its test failed
 * first) is no unhandled rejection: the returned promise has a handler, and awaiting it still
 * throws.
 */
export function arrival<T>(
  what: string,
  listen: (arrived: (value: T) => void, failed: (err: Error) => void) => () => void,
  options: { timeoutMs?: number | undefined; meanwhile?: () => string } = {},
): Promise<T> {
  const { timeoutMs = ARRIVAL_TIMEOUT_MS, meanwhile } = options;
  // Where the wait was armed: the timeout's stack points at the test's line, not at a timer.
  const armed: { stack?: string } = {};
  Error.captureStackTrace(armed, arrival);
  let stop: (() => void) | undefined;
  let over = false;
  const promise = new Promise<T>((resolve, reject) => {
    const end = () => {
      over = true;
      clearTimeout(timer);
      stop?.();
    };
    const timer = setTimeout(() => {
      end();
      const instead = meanwhile?.();
      const err = new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${instead ? `; ${instead}` : ""}`,
      );
      err.stack = `Error: ${err.message}${armed.stack?.slice(armed.stack.indexOf("\n")) ?? ""}`;
      reject(err);
    }, timeoutMs);
    timer.unref();
    stop = listen(
      (value) => {
        if (over) return;
        end();
        resolve(value);
      },
      (err) => {
        if (over) return;
        end();
        reject(err);
      },
    );
    // It came at once, before `stop` was known.
    if (over) stop();
  });
  promise.catch(() => {});
  return promise;
}

/** Things that came, for an error message: how many, and the last ten. */
export function listed(items: readonly string[]): string {
  if (items.length === 0) return "none";
  const shown = items.slice(-10);
  const last = shown.length < items.length ? `the last ${shown.length}: ` : "";
  return `${items.length} (${last}${shown.join(", ")})`;
}

/** Resolves when `condition` holds, checked every 10 ms; rejects after `timeoutMs` naming `what`. */
export async function until(
  condition: () => boolean | Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await condition())) {
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
