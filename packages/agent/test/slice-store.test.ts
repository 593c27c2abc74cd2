/** SliceStore: a list's slices staged for the sink, only those it keeps. */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { AgentMetrics } from "../src/metrics.js";
import type { SliceContent } from "../src/slice.js";
import { type SliceSink, SliceStore } from "../src/slice-store.js";
import { endpointSlice, udpSlice } from "./kit/index.js";

/** A sink that keeps what it is given and records each list it is handed. */
function recordingSink() {
  const kept = new Map<string, SliceContent>();
  const lists: string[][] = [];
  const sink: SliceSink = {
    slice: (id) => kept.get(id),
    replace: async (slices) => {
      lists.push([...slices.keys()].sort());
      kept.clear();
      for (const [id, content] of slices) kept.set(id, content);
    },
    put: (content) => kept.set(content.id, content),
    remove: (id) => kept.delete(id),
  };
  return { sink, lists };
}

describe("SliceStore", () => {
  test("a list stages only the slices that list something the agent acts on", async () => {
    const { sink, lists } = recordingSink();
    const store = new SliceStore(sink, ["udp"], new AgentMetrics(), pino({ level: "silent" }));
    const list = store.replacement();
    list.add(udpSlice("dns-a", "dns", 53, ["10.0.0.1"]));
    list.add(
      endpointSlice({
        name: "web-a",
        service: "web",
        ports: [{ name: "http", port: 80, protocol: "TCP" }],
        endpoints: [{ addresses: ["10.0.0.2"], ready: true }],
      }),
    );
    list.add(udpSlice("empty-a", "empty", 53, []));
    await list.commit(3);
    assert.deepEqual(lists, [["default/dns-a"]]);
  });
});
