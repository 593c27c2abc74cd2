/**
 * The errors of sockdiag/promises' own bounds on a caller's callbacks and on its worker thread. They
 * are in the package's `errors`, so that one made on the caller's thread and thrown in the worker
 * (as a callback's answer) comes back as its class.
 */
import { sockdiagError } from "../sys/errors.js";

/**
 * CallbackTimeoutError: a caller's callback (`callback`: "predicate", "logger.info") did not settle
 * within the call's `callbackTimeout` (ms). To the library it threw this: a predicate's ends the
 * call with PredicateError and a balanced report, a logger's or onNamespace's is reported in
 * `callbackErrors`. Later calls of the same callback in that call are answered so at once.
 */
export class CallbackTimeoutError extends sockdiagError(
  "CallbackTimeoutError",
  "ERR_SOCKDIAG_CALLBACK_TIMEOUT",
) {
  declare readonly callback: string;
  declare readonly timeout: number;
  constructor(callback: string, timeout: number) {
    super(`${callback} did not settle within ${timeout} ms`, { callback, timeout });
  }
}

/**
 * WorkerStoppedError: the worker thread gave no sign of life for `silence` ms after a call was
 * aborted, and was stopped (terminated; the next call starts a new one). Every call it still had
 * rejects with this: what each did after the worker's last message is unknown (`cause`: the
 * AbortError of a call that was aborted).
 */
export class WorkerStoppedError extends sockdiagError("WorkerStoppedError", "ERR_SOCKDIAG_WORKER_STOPPED") {
  declare readonly silence: number;
  constructor(silence: number, cause?: unknown) {
    super(
      `the worker thread was silent for ${silence} ms after an abort and was stopped: what the call did after its last message is unknown`,
      { silence },
      cause,
    );
  }
}
