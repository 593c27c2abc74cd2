/**
 * Every error class sockdiag exports, by name: an error that crossed threads is rebuilt as the
 * class it was, so that `instanceof` and `code` work on the caller's side as in a sync call. The
 * list is the package's `errors`, so that no error class can be left out of it.
 */
import * as errors from "../errors.js";

// biome-ignore lint/suspicious/noExplicitAny: constructors of every signature
type ErrorClass = abstract new (...args: any[]) => Error;

const isErrorClass = (v: unknown): v is ErrorClass =>
  typeof v === "function" && (v as { prototype?: unknown }).prototype instanceof Error;

export const ERROR_CLASSES: ReadonlyMap<string, ErrorClass> = new Map(
  [...(Object.values(errors) as unknown[]).filter(isErrorClass), Error, TypeError, RangeError].map((c) => [
    c.name,
    c,
  ]),
);
