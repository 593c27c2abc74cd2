/**
 * Structured filters for programs: `{ dst: "10.0.0.5", dport: 53 }` instead of text to escape. Each
 * field means what the ss word of the same name means, values are read by the same code as the text
 * parser, and the result is the tree parseFilter gives for the equivalent text — fields joined with
 * "and" in the order src, dst, sport, dport, dev, fwmark, cgroup, autobound, not, and, or.
 */
import { parseIPv6 } from "../diag/address.js";
import type { FilterNode, PortOp } from "./ast.js";
import { FilterSyntaxError } from "./errors.js";
import { type Fail, parseHostWord, parsePortWord } from "./hostcond.js";
import { type ParseOptions, parseMarkMask, portCondition } from "./parser.js";
import { type ServiceTable, systemServices } from "./services.js";

/** A port: a number, or text as ss takes it (":53", "53", "domain", "*"). */
export type PortValue = number | string;

/** A port condition: a port (equality) or comparisons, all of which must hold (`{ ge: 1024, lt: 2048 }`). */
export type PortSpec = PortValue | Partial<Record<PortOp, PortValue>>;

/** StructuredFilter is a filter as an object; every field present must hold. */
export interface StructuredFilter {
  /** Local address as `src` takes it: "10.0.0.1", "10.0.0.0/8", "10.0.0.1:53", "[::1]:53", ":53", "*". */
  src?: string;
  /** Remote address, as `dst` takes it. */
  dst?: string;
  sport?: PortSpec;
  dport?: PortSpec;
  /** Interface name or index. */
  dev?: string | number;
  /** A mark (mask all ones), "MARK/MASK" text, or both as numbers. */
  fwmark?: number | string | { mark: number; mask?: number };
  /** A cgroup v2 path. */
  cgroup?: string;
  /** true: `autobound`; false: `not autobound`. */
  autobound?: boolean;
  not?: StructuredFilter;
  and?: readonly StructuredFilter[];
  or?: readonly StructuredFilter[];
}

const KEYS = [
  "src",
  "dst",
  "sport",
  "dport",
  "dev",
  "fwmark",
  "cgroup",
  "autobound",
  "not",
  "and",
  "or",
] as const;
type Key = (typeof KEYS)[number];

/**
 * filterFromObject converts a structured filter to a tree (undefined for `{}`: no filter). Throws
 * FilterSyntaxError, whose `input` is the offending field written as ss text ("dport 70000").
 */
export function filterFromObject(
  filter: StructuredFilter,
  options: ParseOptions = {},
): FilterNode | undefined {
  return convert(filter, options.services ?? systemServices(), 0);
}

/** How deep `not`/`and`/`or` objects may nest (the text parser allows 100 parentheses). */
const MAX_NESTING = 100;

function convert(filter: StructuredFilter, services: ServiceTable, nesting: number): FilterNode | undefined {
  if (typeof filter !== "object" || filter === null || Array.isArray(filter))
    throw fieldError("filter", filter, "a structured filter must be an object");
  if (nesting > MAX_NESTING)
    throw new FilterSyntaxError(
      `structured filter nested deeper than ${MAX_NESTING} levels`,
      "not",
      "not",
      0,
    );
  for (const key of Object.keys(filter))
    if (!(KEYS as readonly string[]).includes(key))
      throw new FilterSyntaxError(`unknown filter field "${key}"`, key, key, 0);
  let result: FilterNode | undefined;
  for (const key of KEYS) {
    const value = filter[key];
    if (value === undefined) continue;
    const node = field(key, value, services, nesting);
    result = result ? { type: "and", left: result, right: node } : node;
  }
  return result;
}

function field(key: Key, value: unknown, services: ServiceTable, nesting: number): FilterNode {
  const fail: Fail = (reason) => {
    throw fieldError(key, value, reason);
  };
  switch (key) {
    case "src":
    case "dst":
      if (typeof value !== "string") fail(`"${key}" must be a string`);
      // A program's bare IPv6 address ("::1") is unambiguous here: the port has fields of its own.
      return {
        type: "host",
        side: key,
        ...parseHostWord(parseIPv6(value) ? `[${value}]` : value, services, fail),
      };
    case "sport":
    case "dport":
      return portSpec(key === "sport" ? "src" : "dst", value, services, fail);
    case "dev":
      if (typeof value === "number" && Number.isInteger(value) && value >= 0)
        return { type: "dev", device: String(value) };
      if (typeof value !== "string" || value === "") fail(`"dev" must be an interface name or index`);
      return { type: "dev", device: value };
    case "fwmark":
      return { type: "fwmark", ...markSpec(value, fail) };
    case "cgroup":
      if (typeof value !== "string" || value === "") fail(`"cgroup" must be a path`);
      return { type: "cgroup", path: value };
    case "autobound":
      if (typeof value !== "boolean") fail(`"autobound" must be true or false`);
      return value ? { type: "autobound" } : { type: "not", operand: { type: "autobound" } };
    case "not": {
      const operand = convert(value as StructuredFilter, services, nesting + 1);
      if (!operand) fail(`"not" needs a condition`);
      return { type: "not", operand };
    }
    default:
      return list(key, value, services, fail, nesting);
  }
}

function list(
  key: "and" | "or",
  value: unknown,
  services: ServiceTable,
  fail: Fail,
  nesting: number,
): FilterNode {
  if (!Array.isArray(value) || value.length === 0) fail(`"${key}" must be a non-empty array of filters`);
  let result: FilterNode | undefined;
  for (const item of value as StructuredFilter[]) {
    const node = convert(item, services, nesting + 1);
    if (!node) fail(`"${key}" holds an empty filter`);
    result = result ? { type: key, left: result, right: node } : node;
  }
  return result!;
}

function portSpec(side: "src" | "dst", value: unknown, services: ServiceTable, fail: Fail): FilterNode {
  if (typeof value === "number" || typeof value === "string")
    return portCondition(side, "eq", portValue(value, services, fail), fail);
  if (typeof value !== "object" || value === null) fail(`a port must be a number, a string or { op: port }`);
  let result: FilterNode | undefined;
  for (const [op, port] of Object.entries(value)) {
    if (!["eq", "ne", "lt", "le", "gt", "ge"].includes(op)) fail(`unknown port comparison "${op}"`);
    const node = portCondition(side, op as PortOp, portValue(port, services, fail), fail);
    result = result ? { type: "and", left: result, right: node } : node;
  }
  if (!result) fail(`no port comparison given`);
  return result;
}

function portValue(value: unknown, services: ServiceTable, fail: Fail): number | undefined {
  if (typeof value === "string") return parsePortWord(value, services, fail);
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0 || value > 65535)
    fail(`a port must be an integer from 0 to 65535`);
  return value;
}

function markSpec(value: unknown, fail: Fail): { mark: number; mask: number } {
  if (typeof value === "string") return parseMarkMask(value, fail);
  const u32 = (n: unknown): n is number =>
    typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 0xffffffff;
  if (u32(value)) return { mark: value, mask: 0xffffffff };
  const o = value as { mark?: unknown; mask?: unknown } | null;
  if (typeof o !== "object" || o === null || !u32(o.mark) || !(o.mask === undefined || u32(o.mask)))
    fail(`"fwmark" must be a 32-bit mark, "MARK/MASK" or { mark, mask }`);
  return { mark: o.mark, mask: o.mask ?? 0xffffffff };
}

/** fieldError reports a field as the ss text it stands for, pointing at the value. */
function fieldError(key: string, value: unknown, reason: string): FilterSyntaxError {
  const shown = typeof value === "string" ? value : safeJson(value);
  return new FilterSyntaxError(reason, `${key} ${shown}`, shown, key.length + 1);
}

function safeJson(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch {
    return String(value);
  }
}
