/**
 * The agent's test kit: a stand-in API server, EndpointSlice builders, and the core kit's socket
 * holders, namespaces and root guard.
 */
export * from "sockdiag-test-kit";
export * from "./agent-harness.js";
export * from "./api-server.js";
export * from "./backend-scene.js";
export * from "./certificate.js";
export * from "./exec-plugin.js";
export * from "./fake-source.js";
export * from "./fakes.js";
export * from "./slices.js";
export * from "./turns.js";
export * from "./waits.js";
