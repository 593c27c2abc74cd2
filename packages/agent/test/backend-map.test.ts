import assert from "node:assert/strict";
import { describe, test } from "node:test";
import fc from "fast-check";
import { type BackendKey, backendKey } from "../src/backend.js";
import { BackendMap } from "../src/backend-map.js";

/** Every key of `model` is in `map` with its value, and the sizes agree. */
function assertSame(map: BackendMap<number>, model: Map<BackendKey, number>, absent: readonly BackendKey[]) {
  assert.equal(map.size, model.size);
  for (const [key, value] of model) {
    assert.equal(map.get(key), value, `key ${key}`);
    assert.ok(map.has(key));
  }
  for (const key of absent.filter((k) => !model.has(k))) {
    assert.equal(map.get(key), undefined, `key ${key}`);
    assert.equal(map.has(key), false);
  }
}

describe("BackendMap", () => {
  test("does what a Map does, over any sequence of sets and deletes of IPv4 and IPv6 keys", () => {
    // Few distinct keys against 16 to 128 slots: long probe runs, wrap-around, deletes inside runs.
    const v4 = fc.integer({ min: 0, max: 2 ** 49 - 1 });
    const v6 = fc.bigInt({ min: 0n, max: (1n << 145n) - 1n });
    const op = (keys: BackendKey[]) =>
      fc.record({
        key: fc.constantFrom(...keys),
        value: fc.integer(),
        remove: fc.boolean(),
      });
    fc.assert(
      fc.property(
        fc
          .uniqueArray(fc.oneof({ weight: 9, arbitrary: v4 }, { weight: 1, arbitrary: v6 }), {
            minLength: 1,
            maxLength: 64,
          })
          .chain((keys) => fc.tuple(fc.constant(keys), fc.array(op(keys), { maxLength: 300 }))),
        ([keys, ops]) => {
          const map = new BackendMap<number>();
          const model = new Map<BackendKey, number>();
          for (const { key, value, remove } of ops) {
            if (remove) assert.equal(map.delete(key), model.delete(key));
            else {
              assert.equal(map.set(key, value), map);
              model.set(key, value);
            }
          }
          assertSame(map, model, keys);
        },
      ),
      { numRuns: 500 },
    );
  });

  test("keys that share their low bits and differ only above 2^32 are told apart", () => {
    const map = new BackendMap<number>();
    const model = new Map<BackendKey, number>();
    for (let high = 0; high < 2000; high++) {
      const key = high * 2 ** 32 + 106; // port 53/udp of addresses 2^15 apart
      map.set(key, high);
      model.set(key, high);
    }
    assertSame(map, model, [106, 2001 * 2 ** 32 + 106]);
  });

  test("grows to 300,000 backends and shrinks back as they leave, every entry found throughout", () => {
    const map = new BackendMap<string>();
    const key = (i: number) =>
      backendKey({ address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, port: 53, protocol: "udp" });
    const n = 300_000;
    for (let i = 0; i < n; i++) map.set(key(i), `svc${i >> 3}`);
    assert.equal(map.size, n);
    for (let i = 0; i < n; i++) assert.equal(map.get(key(i)), `svc${i >> 3}`);
    // Every other one leaves, then all but 10: the map shrinks past several halvings.
    for (let i = 0; i < n; i += 2) assert.equal(map.delete(key(i)), true);
    assert.equal(map.size, n / 2);
    for (let i = 0; i < n; i++) assert.equal(map.get(key(i)), i % 2 === 0 ? undefined : `svc${i >> 3}`);
    for (let i = 21; i < n; i += 2) map.delete(key(i));
    assert.equal(map.size, 10);
    for (let i = 1; i < 21; i += 2) assert.equal(map.get(key(i)), `svc${i >> 3}`);
    assert.equal(map.delete(key(0)), false);
  });

  test("IPv6 keys and IPv4 keys with the same value are different keys", () => {
    const map = new BackendMap<string>();
    const v4 = backendKey({ address: "10.0.0.5", port: 53, protocol: "udp" });
    const v6 = backendKey({ address: "fd00::5", port: 53, protocol: "udp" });
    map.set(v4, "a").set(BigInt(v4), "b").set(v6, "c");
    assert.equal(map.size, 3);
    assert.deepEqual([map.get(v4), map.get(BigInt(v4)), map.get(v6)], ["a", "b", "c"]);
    assert.equal(map.delete(BigInt(v4)), true);
    assert.deepEqual([map.get(v4), map.get(BigInt(v4)), map.size], ["a", undefined, 2]);
  });

  test("a number that is no backend key is refused with a RangeError, changing nothing", () => {
    const map = new BackendMap<string>();
    map.set(2, "a");
    for (const bad of [-1, 0.5, Number.NaN, 2 ** 53, Number.POSITIVE_INFINITY])
      assert.throws(() => map.set(bad, "x"), RangeError);
    assert.equal(map.size, 1);
    assert.equal(map.get(2), "a");
  });
});
