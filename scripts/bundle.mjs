/**
 * `npm run bundle`: the two one-file CommonJS bundles the package ships, from tsc's output in
 * dist/src — the CLI (dist/bundle/sockdiag-cli.cjs, loaded by src/cli/bin.cjs) and
 * sockdiag/promises' worker thread (dist/bundle/sockdiag-worker.cjs, which src/promises/client.ts
 * starts). koffi stays outside: its native module is found from its own package. Minified for
 * whitespace and syntax; names are kept for stack traces. Plain JavaScript: it runs in `prepare`,
 * where only src/ has been compiled.
 */
import { build } from "esbuild";

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  external: ["koffi"],
  minifyWhitespace: true,
  minifySyntax: true,
  logLevel: "warning",
};

await Promise.all([
  build({
    ...common,
    entryPoints: ["dist/src/cli/main.js"],
    outfile: "dist/bundle/sockdiag-cli.cjs",
  }),
  build({
    ...common,
    entryPoints: ["dist/src/promises/worker.js"],
    outfile: "dist/bundle/sockdiag-worker.cjs",
  }),
]);
