export * from "./bpf.js";
export * from "./capabilities.js";
export * from "./errors.js";
export * from "./ioctl.js";
export * from "./map.js";
export * from "./namespace.js";
export * from "./pidfd.js";
export * from "./socket.js";
