/**
 * The filter parser: ss's grammar (iproute2 misc/ssfilter.y), by recursive descent.
 *
 *   filter   := ε | list
 *   list     := expr ( ("and" | "or" | ε) expr )*        -- left to right, no precedence
 *   expr     := "(" list ")" | "not" expr | term
 *   term     := ("src" | "dst") ["="] HOST
 *             | ("sport" | "dport") [CMP] PORT               -- CMP defaults to "="
 *             | ("dev" | "fwmark" | "cgroup") ["=" | "!="] VALUE
 *             | "autobound"
 *
 * ssfilter.y declares `%left '|'` above `%left '&'`, but its rules (`exprlist: exprlist '|' expr |
 * exprlist '&' expr | exprlist expr`) never let the declarations act: `a or b and c` is
 * `(a or b) and c`, and `not` binds one expr (`not a and b` is `(not a) and b`) — checked against the
 * bytecode iproute2 6.1 sends. `sport = *` is ss's "any port" (a `src *` condition), and
 * `sport < *` is refused (see portCondition).
 */
import type { FilterNode, PortOp, Side } from "./ast.js";
import { FilterSyntaxError } from "./errors.js";
import { type Fail, parseHostWord, parsePortWord } from "./hostcond.js";
import { type Token, tokenize } from "./lexer.js";
import { parseCNumber } from "./prefix.js";
import { type ServiceTable, systemServices } from "./services.js";

/** Options of parseFilter. */
export interface ParseOptions {
  /** Where service names (`:domain`) are looked up; default /etc/services (or a built-in table). */
  services?: ServiceTable;
}

/** Bounds that keep every recursive walk of a tree (format, compile, evaluate) far from the stack limit. */
const MAX_NESTING = 100;
const MAX_NODES = 2000;

const KEYWORDS = new Set(["src", "dst", "sport", "dport", "dev", "fwmark", "cgroup", "autobound"]);

/**
 * parseFilter parses ss filter text — one string, or argv words (joined with blanks, as ss's lexer
 * reads them) — into a tree; undefined for an empty filter (every socket matches).
 * Throws FilterSyntaxError, and nothing else, for invalid input.
 */
export function parseFilter(
  input: string | readonly string[],
  options: ParseOptions = {},
): FilterNode | undefined {
  const text = typeof input === "string" ? input : input.join(" ");
  return new Parser(text, tokenize(text), options.services ?? systemServices()).parseAll();
}

class Parser {
  private pos = 0;
  private nodes = 0;

  constructor(
    private readonly input: string,
    private readonly tokens: Token[],
    private readonly services: ServiceTable,
  ) {}

  parseAll(): FilterNode | undefined {
    if (this.tokens.length === 0) return undefined;
    const node = this.parseList(0);
    const extra = this.peek();
    if (extra) this.fail(extra, `unbalanced ")": no "(" before it`);
    return node;
  }

  private parseList(nesting: number): FilterNode {
    let left = this.parseExpr(nesting);
    for (let t = this.peek(); t && t.kind !== "rparen"; t = this.peek()) {
      let type: "and" | "or" = "and";
      if (t.kind === "and" || t.kind === "or") {
        type = t.kind;
        this.pos++;
      }
      left = this.node({ type, left, right: this.parseExpr(nesting) }, t);
    }
    return left;
  }

  private parseExpr(nesting: number): FilterNode {
    const t = this.next("a condition");
    if (nesting >= MAX_NESTING) this.fail(t, `nested deeper than ${MAX_NESTING} levels`);
    switch (t.kind) {
      case "lparen": {
        if (this.peek()?.kind === "rparen") this.fail(this.peek()!, `empty parentheses`);
        const inner = this.parseList(nesting + 1);
        const close = this.peek();
        if (!close) this.fail(t, `unbalanced "(": no ")" closes it`);
        this.pos++;
        return inner;
      }
      case "not":
        return this.node({ type: "not", operand: this.parseExpr(nesting + 1) }, t);
      case "word":
        if (!t.literal && KEYWORDS.has(t.value)) return this.node(this.parseTerm(t), t);
        return this.fail(
          t,
          `unknown word "${t.value}": expected src, dst, sport, dport, dev, fwmark, cgroup, autobound, not or "("`,
        );
      case "rparen":
        return this.fail(t, `unbalanced ")": a condition is missing before it`);
      default:
        return this.fail(t, `"${t.value}" needs a condition before it`);
    }
  }

  private parseTerm(keyword: Token): FilterNode {
    switch (keyword.value) {
      case "src":
      case "dst": {
        this.comparison(keyword, ["eq"]);
        const word = this.value(keyword, "an address");
        const host = parseHostWord(word.value, this.services, this.failAt(word));
        return { type: "host", side: keyword.value as Side, ...host };
      }
      case "sport":
      case "dport":
        return this.parsePortTerm(keyword, keyword.value === "sport" ? "src" : "dst");
      case "dev": {
        const op = this.comparison(keyword, ["eq", "ne"]);
        return negateIf(op, { type: "dev", device: this.value(keyword, "an interface name or index").value });
      }
      case "fwmark": {
        const op = this.comparison(keyword, ["eq", "ne"]);
        const word = this.value(keyword, "MARK[/MASK]");
        return negateIf(op, { type: "fwmark", ...parseMarkMask(word.value, this.failAt(word)) });
      }
      case "cgroup": {
        const op = this.comparison(keyword, ["eq", "ne"]);
        return negateIf(op, { type: "cgroup", path: this.value(keyword, "a cgroup path").value });
      }
      default:
        return { type: "autobound" };
    }
  }

  private parsePortTerm(keyword: Token, side: Side): FilterNode {
    const op = this.comparison(keyword, ["eq", "ne", "lt", "le", "gt", "ge"]);
    const word = this.value(keyword, "a port");
    const fail = this.failAt(word);
    return portCondition(side, op, parsePortWord(word.value, this.services, fail), fail);
  }

  /** comparison consumes an optional operator after `keyword`; absent means "eq". */
  private comparison(keyword: Token, allowed: readonly PortOp[]): PortOp {
    const t = this.peek();
    if (t?.kind !== "cmp") return "eq";
    if (!allowed.includes(t.cmp!))
      this.fail(t, `"${keyword.value}" takes ${allowed.length > 1 ? `"=" or "!="` : `no "${t.value}"`} here`);
    this.pos++;
    return t.cmp!;
  }

  /** value consumes the value word of a term. */
  private value(keyword: Token, what: string): Token {
    const t = this.peek();
    if (t?.kind === "word" && (t.literal || !KEYWORDS.has(t.value))) {
      this.pos++;
      return t;
    }
    const at = t ?? this.endToken();
    return this.fail(at, `"${keyword.value}" needs ${what}`);
  }

  private node(n: FilterNode, at: Token): FilterNode {
    if (++this.nodes > MAX_NODES) this.fail(at, `more than ${MAX_NODES} conditions and operators`);
    return n;
  }

  private peek(): Token | undefined {
    return this.tokens[this.pos];
  }

  private next(what: string): Token {
    const t = this.tokens[this.pos++];
    if (!t) return this.fail(this.endToken(), `the filter ends where ${what} should be`);
    return t;
  }

  private endToken(): Token {
    const end = this.input.length;
    return { kind: "word", value: "", literal: false, start: end, end };
  }

  private failAt(t: Token): Fail {
    return (reason) => this.fail(t, reason);
  }

  private fail(t: Token, reason: string): never {
    throw new FilterSyntaxError(reason, this.input, this.input.slice(t.start, t.end), t.start);
  }
}

/** negateIf wraps a condition in "not" for the "!=" spelling (ss: SSF_NOT around the condition). */
function negateIf(op: PortOp, node: FilterNode): FilterNode {
  return op === "ne" ? { type: "not", operand: node } : node;
}

/**
 * portCondition builds `sport`/`dport` OP PORT; an undefined port is ss's "any port" (`sport = *`, a
 * `src *` condition), which only "=" and "!=" accept (ss evaluates `sport < *` differently in kernel and
 * user space).
 */
export function portCondition(side: Side, op: PortOp, port: number | undefined, fail: Fail): FilterNode {
  if (port !== undefined) return { type: "port", side, op, port };
  if (op !== "eq" && op !== "ne")
    fail(`"${side === "src" ? "sport" : "dport"}" needs a port number to compare with`);
  return negateIf(op, { type: "host", side });
}

/** parseMarkMask reads `MARK[/MASK]` (ss parse_markmask: C numbers; the mask defaults to all ones). */
export function parseMarkMask(word: string, fail: Fail): { mark: number; mask: number } {
  const [markText, maskText, ...rest] = word.split("/");
  const mark = parseCNumber(markText!);
  const mask = maskText === undefined ? 0xffffffff : parseCNumber(maskText);
  if (rest.length > 0 || mark === undefined || mask === undefined || mark > 0xffffffff || mask > 0xffffffff)
    fail(`"${word}" is not MARK[/MASK] (unsigned 32-bit numbers)`);
  return { mark, mask };
}
