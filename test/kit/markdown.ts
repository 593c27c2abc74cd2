/**
 * Markdown links, as GitHub and npm's page render them: the relative links of a document and the
 * anchors its headings make, so that a test can check that every link of the README and docs/
 * resolves — in the clone and in a packed tarball.
 */
import { readFileSync } from "node:fs";
import { dirname, join, posix } from "node:path";

/** The targets of a document's inline links `[text](target)`, outside code blocks and code spans. */
export function markdownLinks(text: string): string[] {
  const prose = text.replace(/^```[\s\S]*?^```$/gm, "").replace(/`[^`\n]*`/g, "");
  return [...prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((m) => m[1]!);
}

/** GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens. */
export function headingAnchor(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a document's `#` headings (a repeated heading gets -1, -2, ... as on GitHub). */
export function markdownAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const prose = text.replace(/^```[\s\S]*?^```$/gm, "");
  for (const m of prose.matchAll(/^#{1,6}\s+(.+)$/gm)) {
    const base = headingAnchor(m[1]!);
    let anchor = base;
    for (let n = 1; anchors.has(anchor); n++) anchor = `${base}-${n}`;
    anchors.add(anchor);
  }
  return anchors;
}

/**
 * The relative links of the Markdown file `file` (a posix path under `root`) whose target is not
 * one of the paths `exists` accepts (a clone's files, or a tarball's), each as "file -> target".
 * A link to a Markdown file's `#anchor` must name one of its headings.
 */
export function brokenLinks(root: string, file: string, exists: (path: string) => boolean): string[] {
  const broken: string[] = [];
  const text = readFileSync(join(root, file), "utf8");
  for (const target of markdownLinks(text)) {
    if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // absolute: https:, mailto:
    const [path, anchor] = target.split("#") as [string, string | undefined];
    const resolved = path === "" ? file : posix.normalize(posix.join(posix.dirname(file), path));
    if (!exists(resolved.replace(/\/$/, ""))) {
      broken.push(`${file} -> ${target}`);
      continue;
    }
    if (anchor !== undefined && resolved.endsWith(".md")) {
      const anchors = markdownAnchors(readFileSync(join(root, resolved), "utf8"));
      if (!anchors.has(anchor)) broken.push(`${file} -> ${target} (no such heading)`);
    }
  }
  return broken;
}

/** The packed files and their directories (a link may name `docs/`), for brokenLinks on a tarball. */
export function withDirectories(files: readonly string[]): Set<string> {
  const all = new Set(files);
  for (const f of files) for (let d = dirname(f); d !== "." && d !== "/"; d = dirname(d)) all.add(d);
  return all;
}
