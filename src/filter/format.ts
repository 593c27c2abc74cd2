/**
 * formatFilter: a tree back to ss filter text, such that parseFilter(formatFilter(t)) deep-equals t.
 * Operators are written as words, IPv6 addresses bracketed, ports numeric, and values that the lexer
 * would split or read as keywords are backslash-escaped.
 */
import type { FilterNode, HostCond, PortOp } from "./ast.js";

const OP_TEXT: Record<PortOp, string> = { eq: "=", ne: "!=", lt: "<", le: "<=", gt: ">", ge: ">=" };

/** Words the lexer or parser gives a meaning; a value spelled like one is escaped. */
const RESERVED = new Set([
  ...["and", "or", "not", "eq", "ne", "neq", "lt", "le", "leq", "gt", "ge", "geq"],
  ...["src", "dst", "sport", "dport", "dev", "fwmark", "cgroup", "autobound"],
]);

/**
 * formatFilter renders a tree as ss filter text ("" for undefined: no filter). The text is accepted
 * by `ss` too, except for escaped words and for conditions ss lacks a spelling of.
 */
export function formatFilter(node: FilterNode | undefined): string {
  return node === undefined ? "" : format(node);
}

function format(node: FilterNode): string {
  switch (node.type) {
    case "and":
    case "or": {
      const left =
        node.left.type !== node.type && isBinary(node.left) ? `(${format(node.left)})` : format(node.left);
      return `${left} ${node.type} ${operand(node.right)}`;
    }
    case "not":
      return `not ${operand(node.operand)}`;
    case "host":
      return `${node.side} ${formatHost(node)}`;
    case "port":
      return `${node.side === "src" ? "sport" : "dport"} ${OP_TEXT[node.op]} :${node.port}`;
    case "dev":
      return `dev ${escapeWord(node.device)}`;
    case "fwmark":
      return `fwmark 0x${node.mark.toString(16)}${node.mask === 0xffffffff ? "" : `/0x${node.mask.toString(16)}`}`;
    case "cgroup":
      return `cgroup ${escapeWord(node.path)}`;
    case "autobound":
      return "autobound";
  }
}

function isBinary(node: FilterNode): boolean {
  return node.type === "and" || node.type === "or";
}

/** operand renders a right-hand or negated operand, which binds one expr: binary nodes need parentheses. */
function operand(node: FilterNode): string {
  return isBinary(node) ? `(${format(node)})` : format(node);
}

function formatHost(node: HostCond): string {
  const port = node.port === undefined ? "" : `:${node.port}`;
  const p = node.prefix;
  if (!p) return port === "" ? "*" : port;
  if (p.family === "inet") return `${p.address}${p.prefixLength === 32 ? "" : `/${p.prefixLength}`}${port}`;
  return `[${p.address}${p.prefixLength === 128 ? "" : `/${p.prefixLength}`}]${port}`;
}

/** escapeWord backslash-escapes what the lexer would otherwise split or read as an operator. */
function escapeWord(word: string): string {
  const escaped = word.replace(/[\s()!&|<>=\\]/g, (c) => `\\${c}`);
  if (RESERVED.has(escaped) || escaped.startsWith("#")) return `\\${escaped}`;
  return escaped;
}
