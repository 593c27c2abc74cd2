/**
 * What the caller's values become to cross to the worker, and what cannot cross: structured clone
 * refuses functions it finds inside objects it copies, Symbols, WeakMaps and the like, with a
 * DOMException that names no field. Here such a value is found and named, so that a call refuses it
 * with a QueryError and a callback's answer with a ForeignError naming the callback.
 */
import { isOptionsObject, QueryError } from "../options/index.js";
import { ForeignError } from "../sys/errors.js";

/** Whether `err` is structured clone's refusal of a value. */
export function isCloneError(err: unknown): boolean {
  return err instanceof Error && err.name === "DataCloneError";
}

/**
 * The path ("logger.fields", "" for the value itself) of the first part of `value` that structured
 * clone refuses, looking into plain objects and arrays (each once: a cycle is followed no further);
 * undefined if none does.
 */
function unsendablePath(value: unknown, path = "", seen = new Set<object>()): string | undefined {
  const proto = value !== null && typeof value === "object" ? Object.getPrototypeOf(value) : undefined;
  if (Array.isArray(value) || proto === Object.prototype || proto === null) {
    if (seen.has(value as object)) return undefined;
    seen.add(value as object);
    for (const [k, x] of Object.entries(value as object)) {
      const found = unsendablePath(x, path ? `${path}.${k}` : k, seen);
      if (found !== undefined) return found;
    }
    return undefined;
  }
  try {
    structuredClone(value);
    return undefined;
  } catch {
    return path;
  }
}

/** What `value` is, in words, for an error: "a function", "a Symbol", "a WeakMap". */
function kindOf(value: unknown): string {
  if (typeof value === "function") return "a function";
  if (typeof value === "symbol") return "a Symbol";
  if (value === null || typeof value !== "object") return typeof value;
  const name = Object.getPrototypeOf(value)?.constructor?.name;
  return name && name !== "Object" ? `a ${name}` : "an object";
}

/** The part of `value` at `path` (as unsendablePath spells it). */
function partAt(value: unknown, path: string): unknown {
  if (path === "") return value;
  return path.split(".").reduce((v, k) => (v as Record<string, unknown>)?.[k], value);
}

/** A call's argument that cannot go to the worker, as a QueryError naming its field (`name` the argument's). */
export function unsendableArgument(arg: unknown, name: string): QueryError | undefined {
  const path = unsendablePath(arg);
  if (path === undefined) return undefined;
  return new QueryError(
    path || name,
    kindOf(partAt(arg, path)),
    "cannot be sent to sockdiag's worker thread (only data, and functions where a callback is expected)",
  );
}

/** A callback's answer (`what`: "returned", "threw") that cannot go to the worker, as its error. */
export function unsendableAnswer(callback: string, what: string, value: unknown): ForeignError {
  const path = unsendablePath(value);
  const part = path ? ` (at ${path})` : "";
  return new ForeignError(
    new TypeError(
      `${callback} ${what} ${kindOf(path === undefined ? value : partAt(value, path))}${part}, which cannot be sent to sockdiag's worker thread`,
    ),
  );
}

/** A logger's methods that are proxied to the caller's thread. */
const LOG_LEVELS = ["trace", "debug", "info", "warn", "error"] as const;

/**
 * `options` with its logger replaced by stand-ins for the logger's logging methods, each calling
 * the method on the logger (its `this`, as the sync terminator calls it) on the caller's thread: a
 * logger of any class (pino's) crosses so, and is looked up at each call (a level changed later
 * counts). Anything else goes as it is, for the library to take or refuse.
 */
export function withLoggerStandIns<T>(options: T): T {
  if (!isOptionsObject(options)) return options;
  const logger = (options as { logger?: unknown }).logger;
  if (logger === null || typeof logger !== "object") return options;
  const log = logger as Record<string, (...args: unknown[]) => unknown>;
  const standIns: Record<string, (...args: unknown[]) => unknown> = {};
  for (const level of LOG_LEVELS)
    if (typeof log[level] === "function") standIns[level] = (...args) => log[level]!(...args);
  return { ...options, logger: standIns };
}
