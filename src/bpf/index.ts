export * from "./errors.js";
export * from "./find.js";
