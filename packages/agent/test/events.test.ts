import assert from "node:assert/strict";
import { describe, test } from "node:test";
import { pino } from "pino";
import { parseKeyText } from "../src/backend.js";
import {
  type EventObject,
  type EventOutcome,
  EventRecorder,
  type EventSeries,
  type EventSink,
  MAX_NOTE_BYTES,
  type PodHappening,
} from "../src/events.js";
import { PodEvents } from "../src/pod-events.js";
import { ManualClock } from "./kit/index.js";

type Call = { create: EventObject } | { patch: { namespace: string; name: string; series: EventSeries } };

/** A sink that records every request and answers as `answer` says (default: at once, ok). */
class FakeSink implements EventSink {
  readonly calls: Call[] = [];
  answer: (call: Call, signal: AbortSignal) => Promise<void> = async () => {};

  create(event: EventObject, signal: AbortSignal): Promise<void> {
    const call = { create: structuredClone(event) };
    this.calls.push(call);
    return this.answer(call, signal);
  }

  patch(namespace: string, name: string, patch: { series: EventSeries }, signal: AbortSignal): Promise<void> {
    const call = { patch: { namespace, name, series: structuredClone(patch.series) } };
    this.calls.push(call);
    return this.answer(call, signal);
  }

  get created(): EventObject[] {
    return this.calls.flatMap((c) => ("create" in c ? [c.create] : []));
  }

  get patched(): { namespace: string; name: string; series: EventSeries }[] {
    return this.calls.flatMap((c) => ("patch" in c ? [c.patch] : []));
  }
}

function setup(options: { maxQueued?: number } = {}) {
  const clock = new ManualClock();
  const sink = new FakeSink();
  const outcomes: EventOutcome[] = [];
  const recorder = new EventRecorder({
    sink,
    controller: "sockdiag.io/agent",
    instance: "node-1",
    action: "Terminate",
    clock,
    wallTime: () => Date.UTC(2026, 0, 1) + clock.now(),
    logger: pino({ level: "silent" }),
    onOutcome: (o) => outcomes.push(o),
    ...options,
  });
  const count = (o: EventOutcome) => outcomes.filter((x) => x === o).length;
  return { clock, sink, outcomes, recorder, count };
}

const pod = (i: number) => ({
  uid: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
  namespace: "apps",
  name: `client-${i}`,
});
const happening = (i: number, reason = "UDPConnectionsTerminated"): PodHappening => ({
  pod: pod(i),
  reason,
  note: `Destroyed 2 sockets of client-${i}`,
});

describe("EventRecorder", () => {
  test("a new happening is one Event with every field events.k8s.io/v1 requires", async () => {
    const { sink, recorder, count } = setup();
    recorder.record(happening(1));
    await recorder.idle();
    assert.equal(sink.created.length, 1);
    const e = sink.created[0]!;
    assert.equal(e.apiVersion, "events.k8s.io/v1");
    assert.equal(e.kind, "Event");
    assert.equal(e.metadata.namespace, "apps");
    assert.match(e.metadata.name, /^client-1\.[0-9a-f]+$/);
    assert.match(e.eventTime, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    assert.deepEqual(e.regarding, { apiVersion: "v1", kind: "Pod", ...pod(1) });
    assert.equal(e.action, "Terminate");
    assert.equal(e.reason, "UDPConnectionsTerminated");
    assert.equal(e.type, "Normal");
    assert.equal(e.reportingController, "sockdiag.io/agent");
    assert.equal(e.reportingInstance, "node-1");
    assert.equal(e.note, "Destroyed 2 sockets of client-1");
    assert.equal(e.series, undefined);
    assert.equal(count("posted"), 1);
  });

  test("the Event of a pod whose name is 253 characters is named within 253, as a DNS subdomain", async () => {
    const { sink, recorder } = setup();
    // Cut to make room for ".<16 hex digits>", it would end in ".".
    const long = `${"a".repeat(235)}.${"b".repeat(17)}`;
    recorder.record({ ...happening(1), pod: { ...pod(1), name: long } });
    recorder.record({ ...happening(2), pod: { ...pod(2), name: `${"d".repeat(239)}-x` } });
    await recorder.idle();
    for (const e of sink.created) {
      assert.ok(e.metadata.name.length <= 253, `${e.metadata.name.length}`);
      assert.match(e.metadata.name, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);
    }
    assert.equal(sink.created[0]!.regarding.name, long);
  });

  test("a note over 1 kB is cut to 1 kB, at a character", async () => {
    const { sink, recorder } = setup();
    recorder.record({ ...happening(1), note: "é".repeat(2000) });
    await recorder.idle();
    const note = sink.created[0]!.note;
    assert.ok(Buffer.byteLength(note) <= MAX_NOTE_BYTES, `${Buffer.byteLength(note)} bytes`);
    assert.ok(note.endsWith("…"));
    assert.ok(!note.includes("\ufffd"));
  });

  test("the same pod and reason within 10 minutes updates the Event's series by PATCH; after, a new Event", async () => {
    const { clock, sink, recorder, count } = setup();
    recorder.record(happening(1));
    await recorder.idle();
    clock.advance(60_000);
    recorder.record(happening(1));
    await recorder.idle();
    clock.advance(9 * 60_000);
    recorder.record(happening(1));
    await recorder.idle();
    const name = sink.created[0]!.metadata.name;
    assert.deepEqual(
      sink.patched.map((p) => [p.namespace, p.name, p.series.count]),
      [
        ["apps", name, 2],
        ["apps", name, 3],
      ],
    );
    assert.ok(sink.patched[1]!.series.lastObservedTime > sink.patched[0]!.series.lastObservedTime);
    // Another reason is another Event.
    recorder.record(happening(1, "TCPConnectionsTerminated"));
    await recorder.idle();
    assert.equal(sink.created.length, 2);
    // Over 10 minutes after the last: a new Event.
    clock.advance(10 * 60_000 + 1);
    recorder.record(happening(1));
    await recorder.idle();
    assert.equal(sink.created.length, 3);
    assert.notEqual(sink.created[2]!.metadata.name, name);
    assert.equal(count("updated"), 2);
    assert.equal(count("posted"), 3);
  });

  test("repeats while the Event is being created fold into one update", async () => {
    const { sink, recorder } = setup();
    let release!: () => void;
    sink.answer = (call) =>
      "create" in call ? new Promise<void>((resolve) => (release = resolve)) : Promise.resolve();
    recorder.record(happening(1));
    recorder.record(happening(1));
    recorder.record(happening(1));
    release();
    await recorder.idle();
    assert.equal(sink.created.length, 1);
    assert.deepEqual(
      sink.patched.map((p) => p.series.count),
      [3],
    );
  });

  test("an Event storm: at most 60 new Events in any minute, the rest counted dropped", async () => {
    const { clock, sink, recorder, count } = setup();
    for (let i = 0; i < 100; i++) {
      recorder.record(happening(i));
      clock.advance(100);
    }
    await recorder.idle();
    assert.equal(sink.created.length, 60);
    assert.equal(count("dropped"), 40);
    // A minute after the first: room for one more a time as the oldest leave the minute.
    clock.advance(60_000 - 100 * 100);
    recorder.record(happening(1000));
    recorder.record(happening(1001));
    await recorder.idle();
    assert.equal(sink.created.length, 61);
    assert.equal(count("dropped"), 41);
    // Within any minute, never more than 60.
    const times = sink.created.map((e) => Date.parse(e.eventTime));
    for (const t of times) assert.ok(times.filter((u) => u >= t && u < t + 60_000).length <= 60);
  });

  test("a refused Event is counted failed, logged, not retried; the next happening is a new Event", async () => {
    const { sink, recorder, count } = setup();
    sink.answer = async () => {
      throw Object.assign(new Error("403 Forbidden"), { code: 403 });
    };
    recorder.record(happening(1));
    await recorder.idle();
    assert.equal(sink.calls.length, 1);
    assert.equal(count("failed"), 1);
    sink.answer = async () => {};
    recorder.record(happening(1));
    await recorder.idle();
    assert.equal(sink.created.length, 2);
    assert.equal(sink.patched.length, 0);
    assert.equal(count("posted"), 1);
  });

  test("a request that never answers is given up after its timeout; record never waits, the queue is bounded", async () => {
    const { clock, sink, recorder, count } = setup({ maxQueued: 4 });
    sink.answer = (_call, signal) =>
      new Promise<void>((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    for (let i = 0; i < 10; i++) recorder.record(happening(i));
    // record returned for all ten while the first request hangs: 1 in flight, 4 queued, 5 dropped.
    assert.equal(sink.calls.length, 1);
    assert.equal(count("dropped"), 5);
    for (let i = 0; i < 5; i++) {
      clock.advance(10_000);
      await new Promise((resolve) => setImmediate(resolve));
    }
    await recorder.idle();
    assert.equal(sink.calls.length, 5);
    assert.equal(count("failed"), 5);
  });

  test("stop gives up the request in flight and drops what is queued", async () => {
    const { sink, recorder, count } = setup();
    sink.answer = (_call, signal) =>
      new Promise<void>((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
    recorder.record(happening(1));
    recorder.record(happening(2));
    await recorder.stop();
    assert.equal(sink.calls.length, 1);
    assert.equal(count("failed"), 1);
    recorder.record(happening(3));
    await recorder.idle();
    assert.equal(sink.calls.length, 1);
  });
});

describe("PodEvents", () => {
  const services = (key: string, ...names: string[]) => ({
    key: parseKeyText(key)!,
    backend: { address: "10.0.0.1", port: 53, protocol: "udp" as const },
    services: names,
    owners: [],
  });

  test("one happening per known pod: reason by protocol, note naming backends, Services and counts; an unknown pod only logged", async () => {
    const { sink, recorder } = setup();
    const logged: Record<string, unknown>[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => logged.push(JSON.parse(line)) });
    const known = new Map([pod(1), pod(2), pod(3)].map((p) => [p.uid, p]));
    const byIp = new Map([
      ["10.1.0.3", pod(3)],
      ["10.1.0.4", pod(4)],
    ]);
    known.set(pod(4).uid, pod(4));
    const events = new PodEvents(
      recorder,
      { pod: (uid) => known.get(uid), podOfIp: (ip) => byIp.get(ip) },
      logger,
    );
    events.tell(
      [services("10.0.0.1:53/udp", "kube-system/dns"), services("10.0.0.2:80/tcp", "apps/web", "apps/web2")],
      [
        { uid: pod(1).uid, backends: new Map([["10.0.0.1:53/udp", 3]]) },
        { uid: pod(2).uid, backends: new Map([["10.0.0.2:80/tcp", 1]]) },
        {
          uid: pod(3).uid,
          backends: new Map([
            ["10.0.0.2:80/tcp", 2],
            ["10.0.0.1:53/udp", 1],
          ]),
        },
        { uid: pod(9).uid, backends: new Map([["10.0.0.1:53/udp", 1]]) },
      ].reduce(
        (outcome, p) => {
          outcome.pods.push(p);
          return outcome;
        },
        {
          pods: [] as { uid: string; backends: Map<string, number> }[],
          // Conntrack entries by original source: pod 3's IP, pod 4's (no socket), and no pod's.
          flows: new Map([
            ["10.1.0.3", new Map([["10.0.0.1:53/udp", 2]])],
            ["10.1.0.4", new Map([["10.0.0.1:53/udp", 1]])],
            ["10.1.0.99", new Map([["10.0.0.1:53/udp", 5]])],
          ]),
        },
      ),
    );
    await recorder.idle();
    const byPod = new Map(sink.created.map((e) => [e.regarding.name, e]));
    assert.deepEqual([...byPod.keys()].sort(), ["client-1", "client-2", "client-3", "client-4"]);
    assert.equal(byPod.get("client-1")!.reason, "UDPConnectionsTerminated");
    assert.equal(
      byPod.get("client-1")!.note,
      "Destroyed 3 sockets of connections to backends that left their Services: 10.0.0.1:53/udp (3 sockets; Service kube-system/dns)",
    );
    assert.equal(byPod.get("client-2")!.reason, "TCPConnectionsTerminated");
    assert.match(
      byPod.get("client-2")!.note,
      /^Destroyed 1 socket of .*10\.0\.0\.2:80\/tcp \(1 socket; Service apps\/web, apps\/web2\)$/,
    );
    assert.equal(byPod.get("client-3")!.reason, "ConnectionsTerminated");
    assert.match(
      byPod.get("client-3")!.note,
      /^Destroyed 3 sockets and deleted 2 conntrack entries of .*10\.0\.0\.1:53\/udp \(1 socket, 2 conntrack entries; .*10\.0\.0\.2:80\/tcp \(2 sockets; /,
    );
    assert.equal(byPod.get("client-4")!.reason, "UDPConnectionsTerminated");
    assert.match(
      byPod.get("client-4")!.note,
      /^Deleted 1 conntrack entry of .*10\.0\.0\.1:53\/udp \(1 conntrack entry; /,
    );
    const lines = logged.filter((l) => l.msg === "pod sockets destroyed");
    assert.deepEqual(
      lines.map((l) => [l.pod, l.uid, l.sockets]),
      [
        ["apps/client-1", pod(1).uid, 3],
        ["apps/client-2", pod(2).uid, 1],
        ["apps/client-3", pod(3).uid, 3],
        [undefined, pod(9).uid, 1],
        ["apps/client-4", pod(4).uid, 0],
      ],
    );
  });
});
