/** The reflector's requests in the agent's metrics and logs. */
import type { Logger } from "pino";
import { AnswerTooLargeError } from "./list-parser.js";
import type { AgentMetrics } from "./metrics.js";
import type { ReflectorObserver } from "./reflector.js";

export function reflectorLog(metrics: AgentMetrics, logger: Logger): ReflectorObserver {
  let watchesOpened = 0;
  return {
    watchOpened() {
      if (watchesOpened++ > 0) metrics.watchRestarts.inc();
    },
    failed(err, step, delayMs) {
      metrics.errors.inc({ where: step });
      if (err instanceof AnswerTooLargeError) metrics.tooLarge.inc({ bound: err.bound });
      logger.warn(
        { err, retryInMs: delayMs },
        step === "list" ? "endpointslice list failed" : "endpointslice watch failed",
      );
    },
    streamingRefused(err) {
      logger.info({ err }, "streaming lists refused; listing instead");
    },
  };
}
