/**
 * `npm run man`: writes `man sockdiag` (dist/man/sockdiag.8, which package.json's `man` installs)
 * from the CLI's command tables in tsc's output, the same tables `--help` prints. Plain JavaScript:
 * it runs in `prepare`, where only src/ has been compiled.
 */
import { mkdirSync, writeFileSync } from "node:fs";
import { commandSpecs, renderManPage } from "../dist/src/cli/help/index.js";
import { VERSION } from "../dist/src/cli/io/index.js";

mkdirSync("dist/man", { recursive: true });
writeFileSync("dist/man/sockdiag.8", renderManPage(await commandSpecs(), VERSION));
