/**
 * The test kit: socket holders in real network namespaces, throwaway namespaces, the root guard and
 * the `ss` oracle. Integration tests import from here.
 */

export * from "./affinity.js";
export * from "./bpf.js";
export * from "./connected-udp.js";
export * from "./conntrack.js";
export * from "./fake-netlink.js";
export * from "./fds.js";
export * from "./holder.js";
export type * from "./holder-protocol.js";
export * from "./markdown.js";
export * from "./netns.js";
export * from "./npm.js";
export * from "./pod-cgroup.js";
export * from "./population.js";
export * from "./root.js";
export * from "./sockaddr.js";
export * from "./ss.js";
export * from "./ss-parse.js";
export * from "./udp-scene.js";
export * from "./unprivileged.js";
