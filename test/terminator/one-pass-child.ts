/**
 * A termination run in a process of its own (one-pass.test.ts runs it under capsh, with
 * capabilities dropped): argv[2] is the onePass mode; prints the report's one-pass summary and
 * notes, or the error's name, as JSON.
 */
import { BackendTerminator, type OnePassMode } from "../../src/terminator/index.js";

const mode = process.argv[2] as OnePassMode;
try {
  const report = new BackendTerminator({
    netns: "all",
    discover: false,
    conntrack: false,
    onePass: mode,
  }).terminateMany([{ address: "127.0.0.82", port: 9 }]);
  console.log(JSON.stringify({ onePass: report.onePass, notes: report.notes }));
} catch (err) {
  console.log(JSON.stringify({ error: (err as Error).name }));
}
