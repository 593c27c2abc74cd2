/**
 * A Dockerfile read as data, for scripts/replay-dockerfile.ts: its stages and, in each, the
 * instructions the replay knows (FROM, WORKDIR, ENV, COPY, RUN, ENTRYPOINT). Anything else — another
 * instruction, a COPY flag other than --from, an exec-form RUN, a shell-form ENTRYPOINT — is an
 * error naming its line, so that a Dockerfile the replay cannot follow fails it instead of being
 * replayed in part. Also the .dockerignore patterns the replay honours when it copies the context.
 */
import { posix } from "node:path";

/** One stage: FROM IMAGE [AS NAME] and what follows it up to the next FROM. */
export interface Stage {
  image: string;
  name: string | undefined;
  steps: Step[];
}

/** What one instruction of a stage asks. */
export type StepBody =
  | { kind: "workdir"; path: string }
  | { kind: "env"; vars: Record<string, string> }
  | { kind: "copy"; from: string | undefined; sources: string[]; dest: string }
  | { kind: "run"; command: string }
  | { kind: "entrypoint"; argv: string[] };

/** A step of a stage; `line` is where its instruction starts (1-based). */
export type Step = StepBody & { line: number };

/** A Dockerfile the replay cannot follow; the message names the line. */
export class DockerfileError extends Error {
  override readonly name = "DockerfileError";
}

/** The instructions of `text`: comments dropped, continued lines (trailing `\`) joined. */
function instructions(text: string): { line: number; keyword: string; rest: string }[] {
  const out: { line: number; keyword: string; rest: string }[] = [];
  let pending: { line: number; text: string } | undefined;
  text.split("\n").forEach((raw, i) => {
    const trimmed = raw.trim();
    if (trimmed === "" || trimmed.startsWith("#")) return;
    const continued = trimmed.endsWith("\\");
    const part = continued ? trimmed.slice(0, -1).trim() : trimmed;
    pending = pending ? { line: pending.line, text: `${pending.text} ${part}` } : { line: i + 1, text: part };
    if (continued) return;
    const m = /^(\S+)\s*(.*)$/.exec(pending.text)!;
    out.push({ line: pending.line, keyword: m[1]!.toUpperCase(), rest: m[2]! });
    pending = undefined;
  });
  if (pending) throw new DockerfileError(`line ${pending.line}: continued past the end of the file`);
  return out;
}

/** The stages of a Dockerfile, in order. */
export function parseDockerfile(text: string): Stage[] {
  const stages: Stage[] = [];
  for (const { line, keyword, rest } of instructions(text)) {
    const fail = (why: string): never => {
      throw new DockerfileError(`line ${line}: ${keyword} ${rest}: ${why}`);
    };
    if (keyword === "FROM") {
      const m = /^(\S+)(?:\s+AS\s+(\S+))?$/i.exec(rest) ?? fail("expected FROM IMAGE [AS NAME]");
      stages.push({ image: m[1]!, name: m[2], steps: [] });
      continue;
    }
    const stage = stages.at(-1) ?? fail("comes before the first FROM");
    stage.steps.push({ line, ...step(keyword, rest, fail) });
  }
  if (stages.length === 0) throw new DockerfileError("no FROM");
  return stages;
}

function step(keyword: string, rest: string, fail: (why: string) => never): StepBody {
  switch (keyword) {
    case "WORKDIR":
      return { kind: "workdir", path: rest };
    case "ENV":
      return { kind: "env", vars: envVars(rest, fail) };
    case "RUN":
      if (rest.startsWith("[")) fail("the replay runs shell-form RUN only");
      return { kind: "run", command: rest };
    case "ENTRYPOINT": {
      let argv: unknown;
      try {
        argv = JSON.parse(rest);
      } catch {
        fail("the replay runs exec-form ENTRYPOINT only ([...])");
      }
      if (!Array.isArray(argv) || argv.length === 0 || !argv.every((a) => typeof a === "string"))
        fail("expected a non-empty JSON array of strings");
      return { kind: "entrypoint", argv: argv as string[] };
    }
    case "COPY": {
      const words = rest.split(/\s+/);
      let from: string | undefined;
      while (words[0]?.startsWith("--")) {
        const flag = words.shift()!;
        if (!flag.startsWith("--from=")) fail(`the replay knows no COPY flag but --from (${flag})`);
        from = flag.slice("--from=".length);
      }
      if (words.length < 2) fail("expected COPY SOURCE... DEST");
      return { kind: "copy", from, sources: words.slice(0, -1), dest: words.at(-1)! };
    }
    default:
      return fail("an instruction the replay does not know");
  }
}

/** `ENV KEY=VALUE...` (values may be double-quoted) or the legacy `ENV KEY VALUE`. */
function envVars(rest: string, fail: (why: string) => never): Record<string, string> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*=/.test(rest)) {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)\s+(.+)$/.exec(rest) ?? fail("expected KEY=VALUE");
    return { [m[1]!]: m[2]! };
  }
  const vars: Record<string, string> = {};
  const pair = /([A-Za-z_][A-Za-z0-9_]*)=(?:"([^"]*)"|(\S*))(?:\s+|$)/y;
  while (pair.lastIndex < rest.length) {
    const m = pair.exec(rest) ?? fail("expected KEY=VALUE pairs");
    vars[m[1]!] = m[2] ?? m[3]!;
  }
  return vars;
}

/**
 * A .dockerignore as a predicate on context-relative paths ("is it left out?"). Known patterns: a
 * path (`.git`, `deploy/x`: it and what is under it) and `**` + `/NAME` (every file or directory
 * named NAME, at any depth); anything else (other wildcards, `!` exceptions) is an error, so that
 * the replay never copies what the image would not.
 */
export function dockerignore(text: string): (relative: string) => boolean {
  const rules: ((segments: string[]) => boolean)[] = [];
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const anywhere = /^\*\*\/([^*?[\]!/]+)$/.exec(line);
    if (anywhere) {
      const name = anywhere[1]!;
      rules.push((segments) => segments.includes(name));
      continue;
    }
    if (/[*?[\]!]/.test(line)) throw new DockerfileError(`.dockerignore: the replay cannot match ${line}`);
    const path = posix.normalize(line.replace(/^\/+/, "")).replace(/\/+$/, "").split("/");
    rules.push((segments) => path.every((p, i) => segments[i] === p));
  }
  return (relative) => {
    const segments = relative.split("/").filter((s) => s !== "" && s !== ".");
    return rules.some((rule) => rule(segments));
  };
}
