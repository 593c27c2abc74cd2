/**
 * Errors of the filter layer: a filter that does not parse, and a parsed filter naming something
 * (an interface, a cgroup) that does not exist where it is compiled.
 */
import { sockdiagError } from "../sys/errors.js";

/**
 * FilterSyntaxError is a filter text (or structured filter) that is not valid ss syntax. It names the whole
 * `input`, the offending `word` and its `position` (index into `input`); the message quotes the input
 * with a caret line under the word. Parsing never throws anything else.
 */
export class FilterSyntaxError extends sockdiagError("FilterSyntaxError", "ERR_SOCKDIAG_FILTER_SYNTAX") {
  /** The whole filter text. */
  declare readonly input: string;
  /** The offending word ("" when the filter ended too early). */
  declare readonly word: string;
  /** Index of `word` in `input` (`input.length` when the filter ended too early). */
  declare readonly position: number;
  /** What is wrong, without the quoted input. */
  declare readonly reason: string;

  constructor(reason: string, input: string, word: string, position: number) {
    super(`${reason}\n${caretLines(input, position, word.length)}`, { reason, input, word, position });
  }
}

/**
 * FilterResolveError is a filter word that parsed but names nothing where the filter is compiled:
 * an interface unknown in the socket's network namespace, a cgroup path that is not a cgroup v2.
 */
export class FilterResolveError extends sockdiagError("FilterResolveError", "ERR_SOCKDIAG_FILTER_RESOLVE") {
  /** What could not be resolved. */
  declare readonly kind: "device" | "cgroup";
  /** The word as the filter gave it. */
  declare readonly word: string;

  constructor(kind: "device" | "cgroup", word: string, detail: string) {
    super(`cannot resolve ${kind} "${word}": ${detail}`, { kind, word });
  }
}

/** caretLines renders the input on one line and a caret line under [position, position + length). */
function caretLines(input: string, position: number, length: number): string {
  const shown = input.replace(/[\t\r\n]/g, " ");
  return `  ${shown}\n  ${" ".repeat(position)}${"^".repeat(Math.max(1, length))}`;
}
