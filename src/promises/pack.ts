/**
 * Arguments and results across threads. Plain data goes as structured clone does it; four kinds of
 * value need more, and are replaced by tagged records on one side and rebuilt on the other:
 * sockets (through a socket chunk, so they come out as the same InetSocket/UnixSocket objects a sync
 * call makes), errors (rebuilt as the sockdiag class they were, `code`, fields and `cause` kept),
 * functions (callbacks the worker calls back on the caller's thread) and NetNS handles (reopened by
 * descriptor on the other thread: descriptors belong to the process).
 */
import { InetSocket, isListedSocket, type Socket } from "../diag/socket.js";
import { revive } from "../sockets/index.js";
import { ERROR_CLASSES } from "./errors.js";
import { ChunkWriter, readChunk, type SocketChunk } from "./wire.js";

const TAG = "$sockdiag";

/** The sides' hooks for values that are not plain data. */
export interface PackHooks {
  /** A function to pass to the other side, found at `path` ("logger.info"): its id. */
  fn?(f: (...args: unknown[]) => unknown, path: string): number;
  /** A handle to pass: what identifies it (descriptor, ids, name). */
  netns?(ns: object): Record<string, unknown> | undefined;
}

export interface UnpackHooks {
  fn?(id: number): (...args: unknown[]) => unknown;
  netns?(record: Record<string, unknown>): unknown;
}

/** A value ready for postMessage: the tagged value, the socket chunk it refers to, what to transfer. */
export interface Packed {
  value: unknown;
  chunk?: SocketChunk;
}

/** Replace what structured clone cannot carry faithfully. */
export function pack(value: unknown, hooks: PackHooks = {}): Packed {
  let writer: ChunkWriter | undefined;
  // Paths are spelt out only for a side that names its functions.
  const at = hooks.fn
    ? (path: string, key: string | number) => (path ? `${path}.${key}` : `${key}`)
    : () => "";
  const walk = (v: unknown, depth: number, path: string): unknown => {
    if (v === null || typeof v !== "object") {
      if (typeof v === "function" && hooks.fn) return { [TAG]: "fn", id: hooks.fn(v as () => unknown, path) };
      return v;
    }
    if (depth > 64) return v;
    if (isListedSocket(v)) {
      writer ??= new ChunkWriter();
      // revive: an inet socket whose address was changed is refused here as the sync call refuses it.
      return { [TAG]: "socket", index: writer.add(v instanceof InetSocket ? revive(v) : v) };
    }
    if (v instanceof Error) return packError(v, (x) => walk(x, depth + 1, path));
    if (Array.isArray(v)) return v.map((x, i) => walk(x, depth + 1, at(path, i)));
    const proto = Object.getPrototypeOf(v);
    if (proto !== Object.prototype && proto !== null) {
      const ns = hooks.netns?.(v);
      if (ns) return { [TAG]: "netns", ...ns };
      return v;
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) out[k] = walk(x, depth + 1, at(path, k));
    return out;
  };
  const packed = walk(value, 0, "");
  return writer ? { value: packed, chunk: writer.take() } : { value: packed };
}

function packError(err: Error, walk: (v: unknown) => unknown): Record<string, unknown> {
  const fields: Record<string, unknown> = {};
  for (const key of Object.getOwnPropertyNames(err)) {
    if (key === "stack" || key === "message") continue;
    fields[key] = walk((err as unknown as Record<string, unknown>)[key]);
  }
  return { [TAG]: "error", name: err.name, message: err.message, stack: err.stack, fields };
}

/** Rebuild what pack() replaced. */
export function unpack(packed: Packed, hooks: UnpackHooks = {}): unknown {
  const sockets: Socket[] = [];
  if (packed.chunk) readChunk(packed.chunk, (s) => sockets.push(s as Socket));
  const walk = (v: unknown): unknown => {
    if (v === null || typeof v !== "object") return v;
    if (Array.isArray(v)) return v.map(walk);
    if (Object.getPrototypeOf(v) !== Object.prototype) return v;
    const r = v as Record<string, unknown>;
    switch (r[TAG]) {
      case "socket":
        return sockets[r.index as number];
      case "error":
        return unpackError(r, walk);
      case "fn":
        return hooks.fn?.(r.id as number);
      case "netns":
        return hooks.netns?.(r);
    }
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(r)) out[k] = walk(x);
    return out;
  };
  return walk(packed.value);
}

function unpackError(r: Record<string, unknown>, walk: (v: unknown) => unknown): Error {
  const Class = ERROR_CLASSES.get(r.name as string) ?? Error;
  const err = Object.create(Class.prototype) as Error;
  Object.defineProperty(err, "message", { value: r.message, writable: true, configurable: true });
  Object.defineProperty(err, "stack", { value: r.stack, writable: true, configurable: true });
  for (const [k, x] of Object.entries(r.fields as Record<string, unknown>)) {
    Object.defineProperty(err, k, {
      value: walk(x),
      writable: true,
      configurable: true,
      enumerable: k !== "cause",
    });
  }
  return err;
}

/** The ArrayBuffers to transfer with a packed value. */
export function transferOf(packed: Packed): ArrayBuffer[] {
  return packed.chunk ? [packed.chunk.buf] : [];
}
