/**
 * `node state-load.js DIR`: a restart's load of the state file in DIR as the agent's start does it
 * (StateFile.load), in a fresh process that does nothing else. Prints one JSON line: the file's
 * bytes, the backends loaded, how long the load took, and the longest turn of the event loop
 * meanwhile (the longest gap between two turns, seen by an immediate that schedules the next).
 * bench/scale.ts runs it on the state file its agent wrote, with the agent's NODE_OPTIONS and MALLOC_ARENA_MAX.
 */
import { stat } from "node:fs/promises";
import { StateFile } from "../src/state-file.js";

const dir = process.argv[2];
if (dir === undefined) throw new Error("usage: state-load.js DIR");
const state = new StateFile(dir);
let last = performance.now();
let longestTurnMs = 0;
const tick = () => {
  const now = performance.now();
  longestTurnMs = Math.max(longestTurnMs, now - last);
  last = now;
  immediate = setImmediate(tick);
};
let immediate = setImmediate(tick);
const t0 = performance.now();
const loaded = await state.load();
const ms = performance.now() - t0;
clearImmediate(immediate);
longestTurnMs = Math.max(longestTurnMs, performance.now() - last);
if (loaded.problem !== undefined) throw new Error(loaded.problem);
const { size } = await stat(state.path);
console.log(JSON.stringify({ bytes: size, backends: loaded.backends.size, ms, longestTurnMs }));
