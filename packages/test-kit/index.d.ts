export * from "../../dist/test/kit/index.js";
