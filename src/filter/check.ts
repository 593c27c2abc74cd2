/**
 * Filter input, checked: prepareFilter takes a filter in any form a query accepts (ss text, argv
 * words, a tree, an object) to a checked tree, and checkFilterTree checks a tree handed in by a
 * program.
 *
 * checkFilterTree: a filter tree handed in by a program (not parsed here) checked node by node
 * before anything compiles it — a missing child, an unknown node type or a side spelled "dest"
 * is a FilterSyntaxError naming the node's path, never a TypeError from deep inside a compiler.
 *
 * The compilers recurse over the tree, so its depth is bounded. Runs of one associative operator
 * (`a or b or c ...`, which text, structured `or: [...]` lists and backend sets build as left-deep
 * chains thousands long) are rebuilt as balanced trees of the same operands in the same order —
 * the same meaning at depth log2(n) — before the depth is checked. The walk itself keeps its own
 * stack, so a tree of any depth is checked without overflowing the JS stack.
 */

import { parseIPv6 } from "../diag/address.js";
import type { FilterLeaf, FilterNode, HostPrefix } from "./ast.js";
import { FilterSyntaxError } from "./errors.js";
import { parseFilter } from "./parser.js";
import { parseIPv4 } from "./prefix.js";
import { filterFromObject, type StructuredFilter } from "./structured.js";

/** The deepest tree the compilers are given, after balancing (the text parser allows 100 groups). */
export const MAX_FILTER_DEPTH = 256;

const SIDES = new Set(["src", "dst"]);
const PORT_OPS = new Set(["eq", "ne", "lt", "le", "gt", "ge"]);

/**
 * Check `tree` and return it ready for the compilers: the same tree, or a balanced rebuild of its
 * long and/or chains. Throws FilterSyntaxError naming the path of the first bad node ("left.right").
 */
export function checkFilterTree(tree: unknown): FilterNode {
  checkShapes(tree);
  const balanced = balance(tree as FilterNode);
  const depth = depthOf(balanced);
  if (depth > MAX_FILTER_DEPTH)
    throw treeError("filter", `nested ${depth} levels deep; at most ${MAX_FILTER_DEPTH} are allowed`);
  return balanced;
}

function treeError(path: string, reason: string): FilterSyntaxError {
  return new FilterSyntaxError(`filter tree: ${path}: ${reason}`, path, path, 0);
}

/** Every node has a known type and the fields of that type, with values in range. */
function checkShapes(tree: unknown): void {
  const stack: [unknown, string][] = [[tree, "filter"]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, path] = item;
    if (typeof node !== "object" || node === null || Array.isArray(node))
      throw treeError(path, "expected a filter node object");
    const n = node as Record<string, unknown>;
    switch (n.type) {
      case "and":
      case "or":
        stack.push([n.right, `${path}.right`], [n.left, `${path}.left`]);
        break;
      case "not":
        stack.push([n.operand, `${path}.operand`]);
        break;
      case "host":
        checkSide(n.side, path);
        if (n.port !== undefined) checkPort(n.port, `${path}.port`);
        if (n.prefix !== undefined) checkPrefix(n.prefix, `${path}.prefix`);
        break;
      case "port":
        checkSide(n.side, path);
        if (typeof n.op !== "string" || !PORT_OPS.has(n.op))
          throw treeError(`${path}.op`, `expected one of ${[...PORT_OPS].join(", ")}`);
        checkPort(n.port, `${path}.port`);
        break;
      case "dev":
        if (typeof n.device !== "string" || n.device === "")
          throw treeError(`${path}.device`, "expected an interface name or index as text");
        break;
      case "fwmark":
        if (!isU32(n.mark) || !isU32(n.mask))
          throw treeError(path, "mark and mask must be unsigned 32-bit integers");
        break;
      case "cgroup":
        if (typeof n.path !== "string" || n.path === "") throw treeError(`${path}.path`, "expected a path");
        break;
      case "autobound":
        break;
      default:
        throw treeError(
          `${path}.type`,
          `unknown node type ${JSON.stringify(n.type)}; expected host, port, dev, fwmark, cgroup, autobound, and, or, not`,
        );
    }
  }
}

function checkSide(side: unknown, path: string): void {
  if (typeof side !== "string" || !SIDES.has(side))
    throw treeError(`${path}.side`, `expected "src" or "dst", got ${JSON.stringify(side)}`);
}

function checkPort(port: unknown, path: string): void {
  if (typeof port !== "number" || !Number.isInteger(port) || port < 0 || port > 65535)
    throw treeError(path, "expected an integer from 0 to 65535");
}

function checkPrefix(prefix: unknown, path: string): void {
  const p = prefix as Partial<HostPrefix> | null;
  if (typeof p !== "object" || p === null)
    throw treeError(path, "expected { family, address, prefixLength }");
  const bits = p.family === "inet" ? 32 : p.family === "inet6" ? 128 : undefined;
  if (bits === undefined) throw treeError(`${path}.family`, 'expected "inet" or "inet6"');
  const parsed =
    typeof p.address !== "string" ? undefined : bits === 32 ? parseIPv4(p.address) : parseIPv6(p.address);
  if (parsed === undefined) throw treeError(`${path}.address`, `expected an ${p.family} address as text`);
  if (
    typeof p.prefixLength !== "number" ||
    !Number.isInteger(p.prefixLength) ||
    p.prefixLength < 0 ||
    p.prefixLength > bits
  )
    throw treeError(`${path}.prefixLength`, `expected an integer from 0 to ${bits}`);
}

function isU32(n: unknown): boolean {
  return typeof n === "number" && Number.isInteger(n) && n >= 0 && n <= 0xffffffff;
}

/**
 * Rebuild every run of one associative operator as a balanced tree over the same operands, in
 * order. Iterative: a post-order walk with its own stack.
 */
function balance(root: FilterNode): FilterNode {
  const done = new Map<FilterNode, FilterNode>();
  const stack: [FilterNode, boolean][] = [[root, false]];
  while (stack.length > 0) {
    const [node, expanded] = stack.pop()!;
    if (done.has(node)) continue;
    const children = childrenOf(node);
    if (!expanded && children.length > 0) {
      stack.push([node, true]);
      for (const child of children) if (!done.has(child)) stack.push([child, false]);
      continue;
    }
    if (node.type === "not") {
      const operand = done.get(node.operand)!;
      done.set(node, operand === node.operand ? node : { type: "not", operand });
    } else if (node.type === "and" || node.type === "or") {
      const operands = chainOperands(node).map((o) => done.get(o) ?? o);
      done.set(
        node,
        operands.length <= 2 && operands.every((o, i) => o === (i === 0 ? node.left : node.right))
          ? node
          : build(node.type, operands, 0, operands.length),
      );
    } else {
      done.set(node, node);
    }
  }
  return done.get(root)!;
}

/** The direct children the balancing must finish first: the operands of a chain, or a not's operand. */
function childrenOf(node: FilterNode): FilterNode[] {
  if (node.type === "not") return [node.operand];
  if (node.type === "and" || node.type === "or") return chainOperands(node);
  return [];
}

/** The operands of the run of `node.type` rooted at `node`, left to right. */
function chainOperands(node: FilterNode & { type: "and" | "or" }): FilterNode[] {
  const out: FilterNode[] = [];
  const stack: FilterNode[] = [node];
  while (stack.length > 0) {
    const n = stack.pop()!;
    if (n.type === node.type) stack.push(n.right, n.left);
    else out.push(n);
  }
  return out;
}

function build(type: "and" | "or", operands: readonly FilterNode[], from: number, to: number): FilterNode {
  if (to - from === 1) return operands[from]!;
  const mid = from + Math.ceil((to - from) / 2);
  return { type, left: build(type, operands, from, mid), right: build(type, operands, mid, to) };
}

function depthOf(root: FilterNode): number {
  let max = 0;
  const stack: [FilterNode, number][] = [[root, 1]];
  for (let item = stack.pop(); item; item = stack.pop()) {
    const [node, depth] = item;
    if (depth > max) max = depth;
    if (node.type === "not") stack.push([node.operand, depth + 1]);
    else if (node.type === "and" || node.type === "or")
      stack.push([node.left, depth + 1], [node.right, depth + 1]);
  }
  return max;
}

/** A filter as a query accepts it: ss's text (one string or argv words), a parsed tree, or an object. */
export type FilterInput = string | readonly string[] | FilterNode | StructuredFilter;

/** A filter checked and ready to compile; `undefined` tree = no filter. */
export interface PreparedFilter {
  tree: FilterNode | undefined;
  /** Whether to compile a kernel program at all. */
  kernel: boolean;
  /** Whether the predicate reads attributes (mark, cgroup id) that must be decoded. */
  needsAttributes: boolean;
  /** Whether it tests the mark: a kernel program with MARK_COND needs CAP_NET_ADMIN. */
  testsMark: boolean;
  /**
   * Whether its compiled form depends on where and by whom it is compiled: `dev`, `cgroup` and
   * `autobound` are resolved in the namespace, `fwmark` against the caller's privileges. Without
   * them (addresses and ports only) it compiles the same everywhere, once (compileIn).
   */
  perNamespace: boolean;
}

/**
 * Parse and check a filter; throws FilterSyntaxError before anything is sent — also for a tree
 * with a malformed node, and for an input of another type than FilterInput's (naming it).
 */
export function prepareFilter(input: FilterInput | undefined, kernel: boolean): PreparedFilter {
  const parsed = toTree(input);
  const tree = parsed && checkFilterTree(parsed);
  return {
    tree,
    kernel,
    needsAttributes: tree !== undefined && holds(tree, ATTRIBUTE_LEAVES),
    testsMark: tree !== undefined && holds(tree, MARK_LEAVES),
    perNamespace: tree !== undefined && holds(tree, PER_NAMESPACE_LEAVES),
  };
}

function toTree(input: FilterInput | undefined): FilterNode | undefined {
  if (input === undefined) return undefined;
  if (typeof input === "string") return parseFilter(input);
  if (Array.isArray(input)) {
    const bad = input.findIndex((w) => typeof w !== "string");
    if (bad >= 0) throw new FilterSyntaxError(`filter word ${bad} is not a string`, "filter", "filter", 0);
    return parseFilter(input as readonly string[]);
  }
  if (typeof input !== "object" || input === null)
    throw new FilterSyntaxError(
      `a filter is text, words, a filter tree or an object, not ${input === null ? "null" : typeof input}`,
      "filter",
      "filter",
      0,
    );
  // Anything with a `type` is meant as a tree: checkFilterTree names what is wrong with it.
  if ("type" in input) return input as FilterNode;
  return filterFromObject(input as StructuredFilter);
}

/** Whether a leaf of `node` is one of `types`. */
function holds(node: FilterNode, types: ReadonlySet<string>): boolean {
  switch (node.type) {
    case "and":
    case "or":
      return holds(node.left, types) || holds(node.right, types);
    case "not":
      return holds(node.operand, types);
    default:
      return types.has(node.type);
  }
}

/** The leaves whose test reads an attribute (mark, cgroup id) that must be decoded. */
const ATTRIBUTE_LEAVES: ReadonlySet<string> = new Set(["fwmark", "cgroup"]);
const MARK_LEAVES: ReadonlySet<string> = new Set(["fwmark"]);
/** The leaves compiled against the namespace or the caller's privileges (PreparedFilter.perNamespace). */
const PER_NAMESPACE_LEAVES: ReadonlySet<string> = new Set(["dev", "cgroup", "autobound", "fwmark"]);

/**
 * selectsEverything: whether a filter selects every socket it is asked about — no filter, or one
 * whose every condition is a wildcard: `src *`, `dst 0.0.0.0/0` or `::/0` (any address of the
 * family), `dport = :*`, `sport >= 0`, a zero fwmark mask, joined with `and`, or an `or` holding
 * one. A destroy refuses such a filter as it refuses none. A `not` turns "nothing" into
 * "everything" and back; a condition that may fail for some socket makes the answer false, so a
 * true answer is certain and a false one only means "not known to select everything".
 */
export function selectsEverything(tree: FilterNode | undefined): boolean {
  return tree === undefined || always(tree, true);
}

/** Whether `node` holds for every socket (`value` true) or for none (`value` false). */
function always(node: FilterNode, value: boolean): boolean {
  switch (node.type) {
    case "not":
      return always(node.operand, !value);
    case "and":
      return value
        ? always(node.left, true) && always(node.right, true)
        : always(node.left, false) || always(node.right, false);
    case "or":
      return value
        ? always(node.left, true) || always(node.right, true)
        : always(node.left, false) && always(node.right, false);
    default:
      return value && isWildcard(node);
  }
}

function isWildcard(leaf: FilterLeaf): boolean {
  switch (leaf.type) {
    case "host":
      return leaf.port === undefined && (leaf.prefix === undefined || leaf.prefix.prefixLength === 0);
    case "port":
      return (leaf.op === "ge" && leaf.port === 0) || (leaf.op === "le" && leaf.port === 65535);
    case "fwmark":
      // (mark & 0) is 0: a zero mask matches every socket with mark 0, and none with another.
      return leaf.mask === 0 && leaf.mark === 0;
    default:
      return false;
  }
}
