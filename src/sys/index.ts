export * from "./errors.js";
export * from "./namespace.js";
export * from "./socket.js";
