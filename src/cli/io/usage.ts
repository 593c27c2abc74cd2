/**
 * The CLI's one place that turns errors into messages and exit codes: 0 success,
 * 1 the operation failed (kernel refused, some destroys failed), 2 usage error.
 */
import { OutputError } from "./stdout.js";

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

/** UsageError: the command line is wrong. `hint` says what to do instead. */
export class UsageError extends Error {
  override readonly name = "UsageError";
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** Errors that mean "the user's input was wrong": exit 2. Everything else is exit 1. */
const USAGE_ERRORS = new Set([
  "UsageError",
  "QueryError",
  "FilterSyntaxError",
  "FilterResolveError",
  "InvalidNetnsNameError",
  "NetnsNotFoundError",
  "NotANetnsError",
  "AddressError",
  "ConntrackQueryError",
  "EmptySelectionError",
]);

/** Print `err` on stderr the way a user should see it, and return the exit code it maps to. */
export function reportError(err: unknown, stderr: NodeJS.WritableStream = process.stderr): number {
  if (!(err instanceof Error)) {
    stderr.write(`sockdiag: ${String(err)}\n`);
    return EXIT_FAILED;
  }
  // The reader of stdout went away (`| head`): nothing is wrong, and nothing more to say — as ss.
  if (err instanceof OutputError && err.readerGone) return EXIT_OK;
  stderr.write(`sockdiag: ${err.message}\n`);
  if (err instanceof UsageError && err.hint) stderr.write(`${err.hint}\n`);
  if (process.env.SOCKDIAG_DEBUG && err.stack) stderr.write(`${err.stack}\n`);
  return USAGE_ERRORS.has(err.name) ? EXIT_USAGE : EXIT_FAILED;
}
