/**
 * The filter lexer. ss (misc/ssfilter.y yylex) splits its input on blanks only, so "( sport >= :1024 )"
 * works there but "(sport>=:1024)" does not; this lexer also splits at the operator characters
 * `( ) ! & | < > =`, so both work. As in ss, a backslash makes the next character part of the word
 * (a word with an escape is never an operator or keyword, so `dev \and` names a device "and"), and a
 * line starting with `#` is a comment (ss -F FILE).
 */
import type { PortOp } from "./ast.js";
import { FilterSyntaxError } from "./errors.js";

/** What a token is; `word` covers keywords, addresses, ports and names alike. */
export type TokenKind = "lparen" | "rparen" | "not" | "and" | "or" | "cmp" | "word";

/** Token is one lexeme with its place in the input. */
export interface Token {
  kind: TokenKind;
  /** The comparison, for `cmp` tokens. */
  cmp?: PortOp;
  /** The word with escapes removed (for operators: the source text). */
  value: string;
  /** True when the word had a backslash escape: it is then only ever a value, never a keyword. */
  literal: boolean;
  /** Index of the first source character. */
  start: number;
  /** Index just past the last source character. */
  end: number;
}

/** Operator spellings, longest first so "&&" wins over "&". */
const SYMBOLS: ReadonlyArray<readonly [string, TokenKind, PortOp?]> = [
  ["&&", "and"],
  ["||", "or"],
  ["!=", "cmp", "ne"],
  ["==", "cmp", "eq"],
  ["<=", "cmp", "le"],
  [">=", "cmp", "ge"],
  ["(", "lparen"],
  [")", "rparen"],
  ["&", "and"],
  ["|", "or"],
  ["!", "not"],
  ["=", "cmp", "eq"],
  ["<", "cmp", "lt"],
  [">", "cmp", "gt"],
];

/** Words that are operators wherever they stand (ssfilter.y yylex). */
const WORD_OPERATORS = new Map<string, readonly [TokenKind, PortOp?]>([
  ["and", ["and"]],
  ["or", ["or"]],
  ["not", ["not"]],
  ["eq", ["cmp", "eq"]],
  ["ne", ["cmp", "ne"]],
  ["neq", ["cmp", "ne"]],
  ["lt", ["cmp", "lt"]],
  ["le", ["cmp", "le"]],
  ["leq", ["cmp", "le"]],
  ["gt", ["cmp", "gt"]],
  ["ge", ["cmp", "ge"]],
  ["geq", ["cmp", "ge"]],
]);

const BREAK_CHARS = new Set(["(", ")", "!", "&", "|", "<", ">", "="]);

function isBlank(c: string): boolean {
  return c === " " || c === "\t" || c === "\n" || c === "\r";
}

/** tokenize splits filter text into tokens; throws FilterSyntaxError only for a dangling backslash. */
export function tokenize(input: string): Token[] {
  const tokens: Token[] = [];
  let i = 0;
  while (i < input.length) {
    const c = input[i]!;
    if (isBlank(c)) {
      i++;
    } else if (c === "#" && (i === 0 || input[i - 1] === "\n")) {
      while (i < input.length && input[i] !== "\n") i++;
    } else if (BREAK_CHARS.has(c)) {
      const [text, kind, cmp] = SYMBOLS.find(([s]) => input.startsWith(s, i))!;
      tokens.push(makeToken(kind, cmp, text, false, i, i + text.length));
      i += text.length;
    } else {
      i = readWord(input, i, tokens);
    }
  }
  return tokens;
}

function readWord(input: string, start: number, out: Token[]): number {
  let value = "";
  let literal = false;
  let i = start;
  while (i < input.length) {
    const c = input[i]!;
    if (isBlank(c) || BREAK_CHARS.has(c)) break;
    if (c === "\\") {
      if (i + 1 >= input.length) throw new FilterSyntaxError("nothing follows the backslash", input, c, i);
      value += input[i + 1];
      literal = true;
      i += 2;
    } else {
      value += c;
      i++;
    }
  }
  const op = literal ? undefined : WORD_OPERATORS.get(value);
  if (op) out.push(makeToken(op[0], op[1], value, false, start, i));
  else out.push(makeToken("word", undefined, value, literal, start, i));
  return i;
}

function makeToken(
  kind: TokenKind,
  cmp: PortOp | undefined,
  value: string,
  literal: boolean,
  start: number,
  end: number,
): Token {
  const token: Token = { kind, value, literal, start, end };
  if (cmp) token.cmp = cmp;
  return token;
}
