export * from "./availability.js";
export * from "./errors.js";
export * from "./find.js";
export { inetSocketOf } from "./record.js";
