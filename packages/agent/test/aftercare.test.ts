import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { Aftercare, type LateCheck } from "../src/aftercare.js";
import { keyText, parseBackendText, parseKeyText } from "../src/backend.js";
import { ManualClock } from "./kit/index.js";

/** The key a text names. */
const k = (text: string) => parseKeyText(text)!;
const check = (text: string): LateCheck => ({
  key: k(text),
  backend: parseBackendText(text)!,
  services: ["default/dns"],
  owners: [],
});

/** An aftercare on a manual clock that records when each pass ran and what it held. */
function scene(windowMs: number, terminating = new Set<string>()) {
  const clock = new ManualClock();
  const passes: [number, string[]][] = [];
  const aftercare: Aftercare = new Aftercare({
    windowMs,
    clock,
    isTerminating: (key) => terminating.has(keyText(key)),
    onDue: () => {
      const due = aftercare.take();
      if (due.length > 0) passes.push([clock.now(), due.map((c) => keyText(c.key))]);
    },
  });
  return { clock, passes, aftercare };
}

describe("Aftercare", () => {
  test("passes at 1, 3, 7, 15, 23 s and the window's end; then the backend leaves aftercare", () => {
    const s = scene(30_000);
    s.aftercare.start([check("10.0.0.1:53/udp")]);
    s.clock.advance(60_000);
    assert.deepEqual(
      s.passes.map(([at]) => at),
      [1000, 3000, 7000, 15_000, 23_000, 30_000],
    );
    assert.equal(s.aftercare.size, 0);
  });

  test("backends due about together make one pass; one listed again leaves at once", () => {
    const s = scene(10_000);
    s.aftercare.start([check("10.0.0.1:53/udp")]);
    s.clock.advance(100);
    s.aftercare.start([check("10.0.0.2:53/udp"), check("10.0.0.3:53/udp")]);
    s.clock.advance(900);
    assert.deepEqual(s.passes, [[1000, ["10.0.0.1:53/udp", "10.0.0.2:53/udp", "10.0.0.3:53/udp"]]]);
    s.aftercare.end(k("10.0.0.2:53/udp"));
    s.clock.advance(30_000);
    assert.ok(s.passes.slice(1).every(([, keys]) => !keys.includes("10.0.0.2:53/udp")));
    assert.ok(s.passes.slice(1).some(([, keys]) => keys.includes("10.0.0.3:53/udp")));
  });

  test("a window of 0 is no aftercare; a window shorter than a second is one pass at its end", () => {
    const off = scene(0);
    off.aftercare.start([check("10.0.0.1:53/udp")]);
    off.clock.advance(60_000);
    assert.deepEqual(off.passes, []);
    const short = scene(400);
    short.aftercare.start([check("10.0.0.1:53/udp")]);
    short.clock.advance(60_000);
    assert.deepEqual(short.passes, [[400, ["10.0.0.1:53/udp"]]]);
  });

  test("a backend still terminating at its window's end waits without passes; its window starts again when it stops", () => {
    const terminating = new Set(["10.0.0.1:53/udp", "10.0.0.2:53/udp"]);
    const s = scene(10_000, terminating);
    s.aftercare.start([check("10.0.0.1:53/udp"), check("10.0.0.2:53/udp")]);
    s.clock.advance(60_000);
    assert.deepEqual(
      s.passes.map(([at]) => at),
      [1000, 3000, 7000, 10_000],
    );
    assert.equal(s.aftercare.size, 0, "no backend in its window");
    assert.ok(s.aftercare.has(k("10.0.0.1:53/udp")), "waiting while terminating");
    // One stops serving; the other is live again (its aftercare ends).
    terminating.clear();
    s.aftercare.restart(k("10.0.0.1:53/udp"));
    s.aftercare.end(k("10.0.0.2:53/udp"));
    s.clock.advance(60_000);
    assert.deepEqual(s.passes.slice(4), [
      [61_000, ["10.0.0.1:53/udp"]],
      [63_000, ["10.0.0.1:53/udp"]],
      [67_000, ["10.0.0.1:53/udp"]],
      [70_000, ["10.0.0.1:53/udp"]],
    ]);
    assert.equal(s.aftercare.has(k("10.0.0.1:53/udp")), false);
    assert.equal(s.aftercare.has(k("10.0.0.2:53/udp")), false);
  });

  test("restarted within its window, a backend's window runs from then; one not in aftercare is not taken in", () => {
    const s = scene(10_000);
    s.aftercare.start([check("10.0.0.1:53/udp")]);
    s.clock.advance(5000);
    s.aftercare.restart(k("10.0.0.1:53/udp"));
    s.aftercare.restart(k("10.0.0.9:53/udp"));
    s.clock.advance(60_000);
    assert.deepEqual(
      s.passes.map(([at]) => at),
      [1000, 3000, 6000, 8000, 12_000, 15_000],
    );
    assert.equal(s.aftercare.has(k("10.0.0.9:53/udp")), false);
  });
});
