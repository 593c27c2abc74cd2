/**
 * EventRecorder: Kubernetes Events (events.k8s.io/v1) about pods, recorded as client-go's
 * events.k8s.io broadcaster does it, and never in the way of the work they report:
 * - the same pod and reason again within the series window updates the first Event's `series`
 *   (count, lastObservedTime) by a strategic merge PATCH instead of making a new Event; repeats
 *   while a request for it is queued or in flight fold into that one update;
 * - at most `maxPerMinute` new Events in any minute; the rest are dropped and counted;
 * - `record` only queues (a bounded queue: past it, dropped and counted); one request at a time,
 *   each given up after `requestTimeoutMs`; a failed one is counted, logged and dropped, never
 *   retried.
 */
import type { Logger } from "pino";
import type { Clock } from "./clock.js";

/** The Pod an Event is about. */
export interface PodRef {
  uid: string;
  namespace: string;
  name: string;
}

/** One thing that happened to a pod. */
export interface PodHappening {
  pod: PodRef;
  /** UpperCamelCase, e.g. UDPConnectionsTerminated. */
  reason: string;
  /** What it was, for people: cut to 1 kB. */
  note: string;
}

/** An events.k8s.io/v1 Event as sent. */
export interface EventObject {
  apiVersion: "events.k8s.io/v1";
  kind: "Event";
  metadata: { name: string; namespace: string };
  eventTime: string;
  series?: EventSeries;
  reportingController: string;
  reportingInstance: string;
  action: string;
  reason: string;
  regarding: { apiVersion: "v1"; kind: "Pod"; namespace: string; name: string; uid: string };
  note: string;
  type: "Normal";
}

export interface EventSeries {
  count: number;
  lastObservedTime: string;
}

/** Where Events go (event-api.ts; a fake in unit tests). Each call rejects on any failure. */
export interface EventSink {
  create(event: EventObject, signal: AbortSignal): Promise<void>;
  /** A strategic merge patch of the Event `namespace/name`. */
  patch(namespace: string, name: string, patch: { series: EventSeries }, signal: AbortSignal): Promise<void>;
}

/** What became of a happening: posted (a new Event), updated (its series), dropped, failed. */
export type EventOutcome = "posted" | "updated" | "dropped" | "failed";

export interface EventRecorderOptions {
  sink: EventSink;
  /** The controller's qualified name, e.g. sockdiag.io/agent. */
  controller: string;
  /** Who reports: the node's name. */
  instance: string;
  action: string;
  clock: Clock;
  /** Wall time for eventTime and lastObservedTime (default Date.now). */
  wallTime?: () => number;
  logger: Logger;
  onOutcome: (outcome: EventOutcome) => void;
  /** Default 60. */
  maxPerMinute?: number;
  /** Default 600,000 (10 minutes). */
  seriesWindowMs?: number;
  /** Requests waiting, at most; default 256. */
  maxQueued?: number;
  /** Default 10,000. */
  requestTimeoutMs?: number;
  /** Series remembered, at most (the oldest are forgotten first); default 4096. */
  maxSeries?: number;
}

/** The API's bound on an object's name (a DNS subdomain). */
const MAX_NAME = 253;

/** The API's bound on an Event's note, in bytes. */
export const MAX_NOTE_BYTES = 1024;

/** One Event this recorder made, and where its series stands. */
interface Series {
  event: EventObject;
  count: number;
  /** Clock ms of the last happening. */
  last: number;
  /** The Event was created (a PATCH can find it). */
  created: boolean;
  /** A request for it is queued or in flight: a repeat only counts. */
  busy: boolean;
  /** Repeats since the count the server last got. */
  unsent: boolean;
}

export class EventRecorder {
  private readonly series = new Map<string, Series>();
  private readonly queue: string[] = [];
  /** When the last new Events were made (clock ms), oldest first, at most maxPerMinute of them. */
  private readonly made: number[] = [];
  private draining: Promise<void> | undefined;
  private readonly stopper = new AbortController();
  private readonly maxPerMinute: number;
  private readonly windowMs: number;
  private readonly maxQueued: number;
  private readonly timeoutMs: number;
  private readonly maxSeries: number;
  private readonly wallTime: () => number;
  private named = 0;

  constructor(private readonly options: EventRecorderOptions) {
    this.maxPerMinute = options.maxPerMinute ?? 60;
    this.windowMs = options.seriesWindowMs ?? 600_000;
    this.maxQueued = options.maxQueued ?? 256;
    this.timeoutMs = options.requestTimeoutMs ?? 10_000;
    this.maxSeries = options.maxSeries ?? 4096;
    this.wallTime = options.wallTime ?? Date.now;
  }

  /** Queue what happened; returns at once, never throws. */
  record(happening: PodHappening): void {
    if (this.stopper.signal.aborted) return;
    const now = this.options.clock.now();
    this.forgetOld(now);
    const key = `${happening.pod.uid}/${happening.reason}`;
    const known = this.series.get(key);
    if (known) {
      known.count++;
      known.last = now;
      known.unsent = true;
      // Map order is last-happening order: the oldest are forgotten first.
      this.series.delete(key);
      this.series.set(key, known);
      if (!known.busy) this.enqueue(key, known);
      return;
    }
    if (!this.mayMake(now) || this.queue.length >= this.maxQueued) {
      this.options.onOutcome("dropped");
      return;
    }
    this.made.push(now);
    const entry: Series = {
      event: this.eventOf(happening),
      count: 1,
      last: now,
      created: false,
      busy: false,
      unsent: false,
    };
    this.series.set(key, entry);
    while (this.series.size > this.maxSeries) this.series.delete(this.series.keys().next().value!);
    this.enqueue(key, entry);
  }

  /** Resolves when nothing is queued or in flight (tests). */
  async idle(): Promise<void> {
    while (this.draining) await this.draining;
  }

  /** Drop what is queued and give up the request in flight. */
  async stop(): Promise<void> {
    this.stopper.abort();
    this.queue.length = 0;
    await this.idle();
  }

  /** Whether a new Event is within the budget: fewer than maxPerMinute made in the last minute. */
  private mayMake(now: number): boolean {
    while (this.made.length > 0 && now - this.made[0]! >= 60_000) this.made.shift();
    return this.made.length < this.maxPerMinute;
  }

  private forgetOld(now: number): void {
    for (const [key, s] of this.series) {
      if (now - s.last <= this.windowMs) break;
      if (!s.busy) this.series.delete(key);
    }
  }

  private enqueue(key: string, entry: Series): void {
    if (this.queue.length >= this.maxQueued) {
      this.options.onOutcome("dropped");
      return;
    }
    entry.busy = true;
    this.queue.push(key);
    this.draining ??= this.drain().finally(() => {
      this.draining = undefined;
    });
  }

  private async drain(): Promise<void> {
    for (let key = this.queue.shift(); key !== undefined; key = this.queue.shift()) {
      const entry = this.series.get(key);
      if (!entry) continue;
      await this.send(key, entry);
    }
  }

  /** One request for `entry`: its creation, or its series' update. */
  private async send(key: string, entry: Series): Promise<void> {
    const { sink, logger, onOutcome } = this.options;
    const update = entry.created;
    const series: EventSeries = { count: entry.count, lastObservedTime: microTime(this.wallTime()) };
    entry.unsent = false;
    const signal = this.requestSignal();
    try {
      if (update)
        await sink.patch(
          entry.event.metadata.namespace,
          entry.event.metadata.name,
          { series },
          signal.signal,
        );
      else await sink.create(entry.count > 1 ? { ...entry.event, series } : entry.event, signal.signal);
      entry.created = true;
      onOutcome(update ? "updated" : "posted");
    } catch (err) {
      onOutcome("failed");
      logger.warn(
        { err, pod: podName(entry.event), uid: entry.event.regarding.uid, reason: entry.event.reason },
        update ? "pod event not updated" : "pod event not posted",
      );
      // An Event that could not be made, or no longer takes updates: the next happening starts anew.
      this.series.delete(key);
      return;
    } finally {
      signal.done();
      entry.busy = false;
    }
    if (entry.unsent) this.enqueue(key, entry);
  }

  /** A signal that aborts after the request timeout, or when the recorder stops. */
  private requestSignal(): { signal: AbortSignal; done(): void } {
    const { clock } = this.options;
    const controller = new AbortController();
    const abort = () => controller.abort(new Error(`no answer within ${this.timeoutMs} ms`));
    const timer = clock.setTimeout(abort, this.timeoutMs);
    this.stopper.signal.addEventListener("abort", abort, { once: true });
    return {
      signal: controller.signal,
      done: () => {
        clock.clearTimeout(timer);
        this.stopper.signal.removeEventListener("abort", abort);
      },
    };
  }

  private eventOf({ pod, reason, note }: PodHappening): EventObject {
    const wall = this.wallTime();
    return {
      apiVersion: "events.k8s.io/v1",
      kind: "Event",
      metadata: { name: this.nameFor(pod.name, wall), namespace: pod.namespace },
      eventTime: microTime(wall),
      reportingController: this.options.controller,
      reportingInstance: this.options.instance,
      action: this.options.action,
      reason,
      regarding: { apiVersion: "v1", kind: "Pod", namespace: pod.namespace, name: pod.name, uid: pod.uid },
      note: cutToBytes(note, MAX_NOTE_BYTES),
      type: "Normal",
    };
  }

  /**
   * The pod's name and the time in nanoseconds, in hex, as client-go names Events; the nanoseconds
   * below the millisecond count Events, so two in one millisecond differ.
   */
  private nameFor(pod: string, wall: number): string {
    this.named = (this.named + 1) % 1_000_000;
    const suffix = `.${(BigInt(Math.floor(wall)) * 1_000_000n + BigInt(this.named)).toString(16)}`;
    // A name is at most 253 characters: a long pod name is cut, never to end in "." or "-".
    return pod.slice(0, MAX_NAME - suffix.length).replace(/[.-]+$/, "") + suffix;
  }
}

/** A MicroTime as the API writes it: RFC 3339 with microseconds, UTC. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, ".$1000Z");
}

/** `text` in at most `max` UTF-8 bytes, cut at a character and ended with "…" when cut. */
export function cutToBytes(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text;
  let cut = text.slice(0, max);
  while (Buffer.byteLength(`${cut}…`) > max) cut = cut.slice(0, -1);
  return `${cut}…`;
}

function podName(event: EventObject): string {
  return `${event.regarding.namespace}/${event.regarding.name}`;
}
