/**
 * Comparing selections of the filter scene by cookie: what `ss` prints for an expression, what
 * sockdiag lists, and a readable account of the difference (the expression and each socket one side
 * has and the other lacks), so a failing test names exactly what went wrong.
 */
import type { InetSocket } from "../../src/diag/socket.js";
import { ss } from "../kit/index.js";
import type { FilterScene } from "./differential-scene.js";

/** A set of sockets by cookie (decimal string), as both ss -e and sockdiag -j give it. */
export type Cookies = ReadonlySet<string>;

/** ssWords splits an expression into the argv words ss reads (its lexer splits on blanks only). */
export function ssWords(expression: string): string[] {
  return expression.split(/\s+/).filter((w) => w !== "");
}

/** ssCookies runs `ss -N NAME -a -t -u -H -n -e WORDS...` and returns the cookies it printed. */
export async function ssCookies(scene: FilterScene, expression: string): Promise<Set<string>> {
  const rows = await ss(["-N", scene.ns.name, "-a", "-t", "-u", ...ssWords(expression)]);
  const cookies = new Set<string>();
  for (const r of rows) {
    if (r.cookie === undefined) throw new Error(`ss printed a row without a cookie for "${expression}"`);
    cookies.add(r.cookie);
  }
  return cookies;
}

/** cookiesOf returns the cookies of listed sockets. */
export function cookiesOf(sockets: Iterable<InetSocket>): Set<string> {
  const out = new Set<string>();
  for (const s of sockets) out.add(s.cookie.toString());
  return out;
}

/** describeSocket renders a socket as one line: "udp established 10.1.0.4:6000 -> 10.1.0.5:53". */
export function describeSocket(s: InetSocket): string {
  const end = (a: string, p: number) => (a.includes(":") ? `[${a}]:${p}` : `${a}:${p}`);
  return `${s.protocol} ${s.family} ${s.state} ${end(s.src, s.sport)} -> ${end(s.dst, s.dport)}`;
}

/**
 * difference returns undefined when `want` and `got` hold the same cookies, else a report: the
 * expression and each socket only one side has, described through `index` (cookie -> socket).
 */
export function difference(
  expression: string,
  want: Cookies,
  got: Cookies,
  index: ReadonlyMap<string, InetSocket>,
  names: readonly [string, string] = ["ss", "sockdiag"],
): string | undefined {
  const missing = [...want].filter((c) => !got.has(c));
  const extra = [...got].filter((c) => !want.has(c));
  if (missing.length === 0 && extra.length === 0) return undefined;
  const line = (c: string) => {
    const s = index.get(c);
    return `      ${s ? describeSocket(s) : "(not in the scene)"} cookie ${c}`;
  };
  return [
    `  ${JSON.stringify(expression)}: ${names[0]} ${want.size}, ${names[1]} ${got.size}`,
    ...(missing.length
      ? [`    only ${names[0]} (${missing.length}):`, ...missing.slice(0, 10).map(line)]
      : []),
    ...(extra.length ? [`    only ${names[1]} (${extra.length}):`, ...extra.slice(0, 10).map(line)] : []),
  ].join("\n");
}

/** mapLimit runs `fn` over `items` with at most `limit` calls at a time; results keep their order. */
export async function mapLimit<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const worker = async () => {
    for (let i = next++; i < items.length; i = next++) out[i] = await fn(items[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  return out;
}

/** failIfAny throws one error listing every report, with a count, when there is any. */
export function failIfAny(what: string, reports: readonly (string | undefined)[], total: number): void {
  const failed = reports.filter((r): r is string => r !== undefined);
  if (failed.length > 0)
    throw new Error(`${failed.length} of ${total} expressions: ${what}\n${failed.join("\n")}`);
}
