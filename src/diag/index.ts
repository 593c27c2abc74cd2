export * from "./address.js";
export * from "./constants.js";
export * from "./inet.js";
export * from "./socket.js";
export * from "./states.js";
export { decodeTcpInfo } from "./tcpinfo.js";
export * from "./unix.js";
