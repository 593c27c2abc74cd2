/**
 * Run by the terminate bench in a process of its own (so that `taskset` can pin it to one core):
 * sockdiag/promises' BackendTerminator over the host and a scene's pinned namespaces. By default a warm-up run, then
 * a timed one after the caller refilled the scene (it writes a line and waits for one on stdin);
 * with `once`, one run and exit, for timing the whole process as the CLI's is timed. Prints
 * `{ ms, destroyed, pool }` as one JSON line.
 *
 * argv: PIN_DIR ADDRESS PORT [once] (the host and the namespaces pinned in PIN_DIR)
 */
import { createInterface } from "node:readline";
import { BackendTerminator } from "sockdiag/promises";
import { poolSize } from "../src/schedule/index.js";

const [dir, address, port, mode] = process.argv.slice(2);
const backend = { address: address!, port: Number(port) };
const terminator = new BackendTerminator({ netnsDirs: [dir!], discover: false });
if (mode !== "once") {
  await terminator.terminate(backend);
  const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
  process.stdout.write("warm\n");
  await lines.next();
}
const t0 = process.hrtime.bigint();
const report = await terminator.terminate(backend);
const ms = Number(process.hrtime.bigint() - t0) / 1e6;
process.stdout.write(`${JSON.stringify({ ms, destroyed: report.total.destroyed, pool: poolSize() })}\n`);
process.exit(0);
