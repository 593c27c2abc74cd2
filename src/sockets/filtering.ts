/**
 * A query's filter, prepared once per query and compiled per namespace: the kernel program
 * (INET_DIAG_REQ_BYTECODE, sent whenever the expression allows) and the JS predicate (always run,
 * so results never depend on whether the kernel filtered). The predicate is compiled inside the
 * target namespace, because `dev` names and the ephemeral port range are that namespace's.
 */
import type { InetSocket } from "../diag/socket.js";
import {
  checkFilterTree,
  compileBytecode,
  compilePredicate,
  type FilterNode,
  FilterSyntaxError,
  filterFromObject,
  parseFilter,
  type StructuredFilter,
} from "../filter/index.js";
import { type NetNS, runIn } from "../netns/index.js";

/** A filter as a query accepts it: ss's text (one string or argv words), a parsed tree, or an object. */
export type FilterInput = string | readonly string[] | FilterNode | StructuredFilter;

/** A filter checked and ready to compile; `undefined` tree = no filter. */
export interface PreparedFilter {
  tree: FilterNode | undefined;
  /** Whether to compile a kernel program at all. */
  kernel: boolean;
  /** Whether the predicate reads attributes (mark, cgroup id) that must be decoded. */
  needsAttributes: boolean;
}

/** A filter compiled for one namespace. */
export interface CompiledFilter {
  /** The kernel program, when the expression can be expressed (exactly or as a superset). */
  bytecode: Buffer | undefined;
  predicate: ((s: InetSocket) => boolean) | undefined;
}

/**
 * Parse and check a filter; throws FilterSyntaxError before anything is sent — also for a tree
 * with a malformed node, and for an input of another type than FilterInput's (naming it).
 */
export function prepareFilter(input: FilterInput | undefined, kernel: boolean): PreparedFilter {
  const parsed = toTree(input);
  const tree = parsed && checkFilterTree(parsed);
  return { tree, kernel, needsAttributes: tree ? readsAttributes(tree) : false };
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

function readsAttributes(node: FilterNode): boolean {
  switch (node.type) {
    case "fwmark":
    case "cgroup":
      return true;
    case "and":
    case "or":
      return readsAttributes(node.left) || readsAttributes(node.right);
    case "not":
      return readsAttributes(node.operand);
    default:
      return false;
  }
}

/**
 * What the bytecode must leave to the predicate for this caller: MARK_COND is refused with EPERM
 * without CAP_NET_ADMIN (the predicate checks the mark anyway). Asked at each compile, so a process
 * that changes its privileges is judged as it is now.
 */
function omittedConditions(): readonly "fwmark"[] {
  return process.geteuid?.() === 0 ? [] : ["fwmark"];
}

/**
 * Compile a prepared filter for sockets of `netns` (undefined: the caller's own), inside it: `dev`
 * names, cgroup paths and the ephemeral port range are that namespace's. Throws FilterResolveError
 * for an unknown device or cgroup.
 */
export function compileIn(filter: PreparedFilter, netns: NetNS | undefined): CompiledFilter {
  const tree = filter.tree;
  if (!tree) return { bytecode: undefined, predicate: undefined };
  const compile = () => ({
    bytecode: filter.kernel ? compileBytecode(tree, { omit: omittedConditions() }) : undefined,
    predicate: compilePredicate(tree),
  });
  return netns ? runIn(netns, compile) : compile();
}
