/** The error of the terminator: a backend that is not one. */
import { sockdiagError } from "../sys/errors.js";

/** AddressError: a backend address or port that is not valid; names the offending text. */
export class AddressError extends sockdiagError("AddressError", "ERR_SOCKDIAG_ADDRESS") {
  declare readonly input: string;
  constructor(input: string, detail: string) {
    super(`invalid backend "${input}": ${detail}`, { input });
  }
}

/**
 * OnePassUnavailableError: `onePass: "on"` where the one pass cannot run; `reason` says why
 * ("privileges", "pid-namespace", "no-btf", "kernel", "verifier", "tcp", "pass-failed", "seam").
 */
export class OnePassUnavailableError extends sockdiagError(
  "OnePassUnavailableError",
  "ERR_SOCKDIAG_ONE_PASS",
) {
  declare readonly reason: string;
  constructor(reason: string, detail: string) {
    super(`the one pass cannot run (${reason}): ${detail}`, { reason });
  }
}
