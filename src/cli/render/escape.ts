/**
 * Text from outside (a unix socket's path, a process name, a namespace's pin name, a cgroup path)
 * as a table shows it, escaped as GNU `ls -b` escapes a file name: a backslash doubled, control
 * characters as C escapes (\n, \t, ...) or a backslash and three octal digits per UTF-8 byte
 * (\033, \177, \302\233), so that no name starts a row of its own or drives the terminal. Spaces
 * stay as they are (ls -b escapes them). JSON output keeps the exact text.
 */

/** What needs escaping: C0 controls, the backslash, DEL and the C1 controls. */
const NEEDS_ESCAPE = /[\x00-\x1f\\\x7f-\x9f]/;

const C_ESCAPES: Readonly<Record<number, string>> = {
  7: "\\a",
  8: "\\b",
  9: "\\t",
  10: "\\n",
  11: "\\v",
  12: "\\f",
  13: "\\r",
  92: "\\\\",
};

/** `text` as a table cell shows it; the very string when nothing in it needs escaping. */
export function escapeText(text: string): string {
  if (!NEEDS_ESCAPE.test(text)) return text;
  let out = "";
  for (const char of text) {
    const code = char.charCodeAt(0);
    if (code > 0x9f || (code >= 0x20 && code < 0x7f && code !== 92)) out += char;
    else if (C_ESCAPES[code] !== undefined) out += C_ESCAPES[code];
    else for (const byte of Buffer.from(char)) out += `\\${byte.toString(8).padStart(3, "0")}`;
  }
  return out;
}
