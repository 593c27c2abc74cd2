/**
 * `npm run bench [-- SECTION...]`: sockdiag against ss on the same namespaces, in one run.
 * Sections: codec, list, destroy, netns, terminate, promises, conntrack (default: all). Needs root.
 * Ratios are what count; absolute times move from machine to machine.
 */
import { cleanupLeftovers } from "../test/kit/index.js";
import { benchCodec } from "./codec.js";
import { benchConntrack } from "./conntrack.js";
import { benchDestroy } from "./destroy.js";
import { benchList } from "./list.js";
import { cleanupBenchLeftovers } from "./many.js";
import { environmentNote } from "./measure.js";
import { benchNamespaces } from "./namespaces.js";
import { benchPromises } from "./promises.js";
import { benchTerminate } from "./terminate.js";

const SECTIONS: Record<string, () => Promise<string[]> | string[]> = {
  codec: benchCodec,
  list: benchList,
  destroy: benchDestroy,
  netns: benchNamespaces,
  terminate: benchTerminate,
  promises: benchPromises,
  conntrack: benchConntrack,
};

async function main(): Promise<void> {
  const wanted = process.argv.slice(2);
  for (const name of wanted)
    if (!SECTIONS[name])
      throw new Error(`unknown section ${name}; known: ${Object.keys(SECTIONS).join(", ")}`);
  console.log(environmentNote());
  await cleanupLeftovers();
  cleanupBenchLeftovers();
  for (const [name, run] of Object.entries(SECTIONS)) {
    if (wanted.length > 0 && !wanted.includes(name)) continue;
    const lines = await run();
    console.log(`\n${lines.join("\n")}`);
  }
}

main().catch((err: Error) => {
  console.error(`bench failed: ${err.stack ?? err.message}`);
  process.exitCode = 1;
});
