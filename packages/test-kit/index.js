// The root's test kit as built by its `npm run build` (a package cannot export files outside it).
export * from "../../dist/test/kit/index.js";
