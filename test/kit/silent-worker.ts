/**
 * A stand-in for sockdiag/promises' worker that goes silent: it answers every call with the call's
 * name, except "probe" and "terminateManyAt", on which it blocks for good (as a worker stuck where
 * no abort reaches it), and "destroySocket", which it holds until the flag it is given is set.
 */
import { parentPort } from "node:worker_threads";

parentPort!.on("message", (m: { t: string; id: number; op?: string; args?: { value: unknown[] } }) => {
  if (m.t !== "call") return;
  if (m.op === "probe" || m.op === "terminateManyAt")
    Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
  if (m.op === "destroySocket") Atomics.wait(new Int32Array(m.args!.value[0] as SharedArrayBuffer), 0, 0);
  parentPort!.postMessage({ t: "done", id: m.id, result: { value: m.op } });
});
