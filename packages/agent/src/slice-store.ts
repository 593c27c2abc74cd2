/**
 * SliceStore: the reflector's store for EndpointSlices. Each raw object is untrusted input, read
 * into its compact form (slice.ts): whatever names nothing is skipped, logged once per version and
 * counted; the compact slices go to the sink (the agent). A list is staged and handed over whole.
 */
import { createHash } from "node:crypto";
import type { Logger } from "pino";
import type { AgentProtocol } from "./backend.js";
import type { AgentMetrics } from "./metrics.js";
import type { ReflectorStore, Replacement } from "./reflector.js";
import { listsNothing, objectId, readSlice, type Skip, type SliceContent } from "./slice.js";

/** Where the slices read go. */
export interface SliceSink {
  /** The slice known under this id, if any. */
  slice(id: string): SliceContent | undefined;
  /** A whole list: these replace every slice known. */
  replace(slices: ReadonlyMap<string, SliceContent>, count: number): Promise<void>;
  put(content: SliceContent): void;
  remove(id: string): void;
}

/** How many unnamed malformed objects are remembered as logged (then the memory starts again). */
const MAX_UNNAMED_REMEMBERED = 1000;

export class SliceStore implements ReflectorStore {
  private readonly protocols: ReadonlySet<AgentProtocol>;
  /** Digests of the objects without a name that were logged. */
  private readonly unnamedSeen = new Set<string>();

  constructor(
    private readonly sink: SliceSink,
    protocols: readonly AgentProtocol[],
    private readonly metrics: AgentMetrics,
    private readonly logger: Logger,
  ) {
    this.protocols = new Set(protocols);
  }

  replacement(): Replacement {
    const staged = new Map<string, SliceContent>();
    return {
      add: (raw) => {
        // A re-listed slice at the version already known is not read again.
        const identity = objectId(raw);
        const known = identity && this.sink.slice(identity.id);
        if (known && identity.resourceVersion !== "" && known.resourceVersion === identity.resourceVersion) {
          staged.set(known.id, known);
          return;
        }
        // A slice that lists nothing is not staged: the sink would not keep it, and a list of
        // 100,000 TCP-only Services would be held until its end.
        const content = this.read(raw);
        if (content && !listsNothing(content)) staged.set(content.id, content);
      },
      commit: (count) => this.sink.replace(staged, count),
      abandon: () => staged.clear(),
    };
  }

  put(raw: unknown): void {
    const content = this.read(raw);
    if (!content) return;
    this.logger.debug({ slice: content.id, backends: content.keys.length }, "slice put");
    this.sink.put(content);
  }

  delete(raw: unknown): void {
    const identity = objectId(raw);
    if (!identity) {
      this.skippedObject(raw, [{ reason: "metadata", detail: "a deleted object without metadata" }]);
      return;
    }
    this.logger.debug({ slice: identity.id }, "slice deleted");
    this.sink.remove(identity.id);
  }

  /** Read a raw slice; log and count what was skipped, once per version of the slice. */
  private read(raw: unknown): SliceContent | undefined {
    const { content, skipped } = readSlice(raw, this.protocols);
    if (skipped.length === 0) return content;
    if (!content) {
      this.skippedObject(raw, skipped);
      return undefined;
    }
    // Without a resourceVersion (a real server always sends one), the object's text is its version.
    if (content.resourceVersion === "") content.resourceVersion = `sha256:${digestOf(raw)}`;
    if (this.sink.slice(content.id)?.resourceVersion !== content.resourceVersion)
      this.skippedParts(content.id, skipped);
    return content;
  }

  /** An object without a name has no version to remember: it is known by its text. */
  private skippedObject(raw: unknown, skipped: readonly Skip[]): void {
    const digest = digestOf(raw);
    if (this.unnamedSeen.has(digest)) return;
    if (this.unnamedSeen.size >= MAX_UNNAMED_REMEMBERED) this.unnamedSeen.clear();
    this.unnamedSeen.add(digest);
    this.skippedParts("(no metadata)", skipped);
  }

  private skippedParts(slice: string, skipped: readonly Skip[]): void {
    for (const s of skipped) this.metrics.skipped.inc({ reason: s.reason });
    this.logger.warn({ slice, skipped: skipped.map((s) => s.detail) }, "endpointslice parts skipped");
  }
}

/** The digest of an object's text, less the apiVersion and kind that watch events carry and list items do not. */
function digestOf(raw: unknown): string {
  const {
    apiVersion: _a,
    kind: _k,
    ...rest
  } = (typeof raw === "object" && raw !== null ? raw : { raw }) as Record<string, unknown>;
  return createHash("sha256").update(JSON.stringify(rest)).digest("base64");
}
