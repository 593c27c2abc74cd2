/** The reflector's requests in the agent's metrics and logs. */
import type { Logger } from "pino";
import type { AgentMetrics } from "./metrics.js";
import { AnswerTooLargeError } from "./object-stream.js";
import type { ReflectorObserver } from "./reflector.js";

/**
 * The observer of the EndpointSlice watch (`resource` "endpointslice"), or of the Pod watch
 * ("pod": its failures counted as errors where pod_list and pod_watch, its restarts not counted).
 */
export function reflectorLog(
  metrics: AgentMetrics,
  logger: Logger,
  resource: "endpointslice" | "pod" = "endpointslice",
): ReflectorObserver {
  let watchesOpened = 0;
  return {
    watchOpened() {
      if (watchesOpened++ > 0 && resource === "endpointslice") metrics.watchRestarts.inc();
    },
    failed(err, step, delayMs) {
      metrics.errors.inc({ where: resource === "pod" ? `pod_${step}` : step });
      if (err instanceof AnswerTooLargeError) metrics.tooLarge.inc({ bound: err.bound });
      logger.warn({ err, retryInMs: delayMs }, `${resource} ${step} failed`);
    },
    streamingRefused(err) {
      logger.info({ err }, "streaming lists refused; listing instead");
    },
  };
}
