/**
 * Option objects checked whole: every public call of sockets, conntrack and the terminator reads
 * its options through these, so that a typo (`protocol` for `protocols`) or a string where a
 * boolean belongs (`all: "false"`) is a QueryError naming the field — never ignored, never truthy.
 */
import { QueryError } from "./errors.js";

export { QueryError };

/**
 * The keys of an option type, as a table: `Record<keyof T, true>` makes the compiler list every key
 * of the interface, so a key added to it and forgotten here fails to build.
 */
export type KnownKeys<T> = Readonly<Record<keyof T, true>>;

/**
 * Check that `options` is a plain object (not null, an array or a primitive) whose own keys are all
 * in `known`. `field` names it in errors ("query", "anyOf[2]"). Throws QueryError naming the first
 * unknown key and the known key nearest to it. A key whose value is undefined counts as absent, as
 * it does for every reader of the object.
 */
export function checkOptions(options: unknown, known: KnownKeys<object>, field: string): void {
  if (!isOptionsObject(options)) throw new QueryError(field, describe(options), "expected an options object");
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined || Object.hasOwn(known, key)) continue;
    const keys = Object.keys(known);
    const near = nearest(key, keys);
    const path = field === "query" ? key : `${field}.${key}`;
    throw new QueryError(
      path,
      describe(value),
      `unknown option${near === undefined ? "" : `; did you mean "${near}"?`} (known: ${keys.join(", ")})`,
    );
  }
}

/** Whether a value can be an options object: an object, not null, not an array. */
export function isOptionsObject(value: unknown): value is object {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Check that `value` is true, false or undefined; throws QueryError naming `field` otherwise. */
export function checkBoolean(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== "boolean")
    throw new QueryError(field, describe(value), "expected true or false");
}

/**
 * Check that `value` is an array or undefined (a list of names): a lone string would be read one
 * letter at a time. Throws QueryError naming `field`, with what was probably meant.
 */
export function checkList(value: unknown, field: string): void {
  if (value === undefined || Array.isArray(value)) return;
  const hint = typeof value === "string" ? `; write [${JSON.stringify(value)}]` : "";
  throw new QueryError(field, describe(value), `expected an array${hint}`);
}

/** Check that `value` is a function or undefined (a callback); throws QueryError naming `field`. */
export function checkFunction(value: unknown, field: string): void {
  if (value !== undefined && typeof value !== "function")
    throw new QueryError(field, describe(value), "expected a function");
}

/** Check that `value` is an integer of at least 1, or undefined (a batch size). */
export function checkPositiveInteger(value: unknown, field: string): void {
  if (value !== undefined && !(Number.isSafeInteger(value) && (value as number) >= 1))
    throw new QueryError(field, describe(value), "expected an integer of at least 1");
}

/** A caller's value as a message shows it. */
export function describe(value: unknown): string {
  if (typeof value === "string") return value;
  if (Array.isArray(value)) return "(an array)";
  if (typeof value === "object" && value !== null) return "(an object)";
  return String(value);
}

/**
 * The word of `words` nearest to `word` by edit distance (Levenshtein: insertions, deletions and
 * substitutions), if one is near enough to be a likely typo: at most a third of the longer word.
 */
export function nearest(word: string, words: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Number.POSITIVE_INFINITY;
  for (const w of words) {
    const d = editDistance(word.toLowerCase(), w.toLowerCase());
    if (d < bestDistance && d <= Math.max(1, Math.floor(Math.max(word.length, w.length) / 3))) {
      best = w;
      bestDistance = d;
    }
  }
  return best;
}

function editDistance(a: string, b: string): number {
  let row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const next = [i];
    for (let j = 1; j <= b.length; j++)
      next[j] = Math.min(row[j]! + 1, next[j - 1]! + 1, row[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    row = next;
  }
  return row[b.length]!;
}
