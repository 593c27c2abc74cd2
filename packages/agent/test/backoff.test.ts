/** The reflector's back-off: client-go's numbers, on a clock moved by hand. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { ExponentialBackoff } from "../src/backoff.js";
import { ManualClock } from "./kit/index.js";

describe("ExponentialBackoff", () => {
  test("800 ms doubling to a 30 s cap, each delay between it and twice it (jitter factor 1.0)", () => {
    for (const [r, times] of [
      [0, 1],
      [0.5, 1.5],
      [0.999, 1.999],
    ] as const) {
      const clock = new ManualClock();
      const backoff = new ExponentialBackoff({ clock, random: () => r });
      const delays: number[] = [];
      for (let i = 0; i < 9; i++) {
        delays.push(backoff.next());
        clock.advance(1000);
      }
      const bases = [800, 1600, 3200, 6400, 12_800, 25_600, 30_000, 30_000, 30_000];
      assert.deepEqual(
        delays,
        bases.map((b) => Math.round(b * times)),
      );
    }
  });

  test("back to 800 ms only once no back-off was asked for 2 minutes", () => {
    const clock = new ManualClock();
    const backoff = new ExponentialBackoff({ clock, random: () => 0 });
    assert.equal(backoff.next(), 800);
    clock.advance(120_000);
    assert.equal(backoff.next(), 1600, "a failure every 2 minutes keeps doubling");
    clock.advance(120_001);
    assert.equal(backoff.next(), 800);
  });
});
