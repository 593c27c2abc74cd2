/**
 * The seed-style Go codec benchmark (bench/go) run beside ours: `go test -bench -benchmem`, its
 * ns/op, B/op and allocs/op, medians of the counts. Without a `go` command (CI does not run the
 * bench) the anchor is absent and the bench says so instead of failing.
 */
import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { median } from "./measure.js";

/** One Go benchmark's figures. */
export interface GoFigure {
  nsPerOp: number;
  bytesPerOp: number;
  allocsPerOp: number;
}

/** Every run's figures by benchmark name (BenchmarkParse -> "Parse"), or why there are none. */
export type GoAnchor = { runs: Map<string, GoFigure[]>; version: string } | { missing: string };

// From dist/bench/ back to the sources: bench/go is not compiled into dist.
const GO_DIR = fileURLToPath(new URL("../../bench/go/", import.meta.url));

/** `go test -bench . -benchmem -count COUNT` in bench/go, parsed; GOFLAGS of the caller ignored. */
export function runGoAnchor(count = 3): GoAnchor {
  const env = { ...process.env, GOFLAGS: "", GOTOOLCHAIN: "local" };
  const version = spawnSync("go", ["version"], { encoding: "utf8", env });
  if (version.error) return { missing: `no Go anchor: \`go\` not found (${version.error.message})` };
  const r = spawnSync(
    "go",
    ["test", "-run", "^$", "-bench", ".", "-benchmem", "-benchtime", "0.5s", "-count", String(count)],
    { cwd: GO_DIR, encoding: "utf8", env },
  );
  if (r.status !== 0) return { missing: `no Go anchor: go test exited ${r.status}: ${r.stderr.trim()}` };
  const runs = new Map<string, GoFigure[]>();
  // BenchmarkParse-2   7405606   135.8 ns/op   144 B/op   3 allocs/op
  const line = /^Benchmark(\w+?)(?:-\d+)?\s+\d+\s+([\d.]+) ns\/op\s+([\d.]+) B\/op\s+([\d.]+) allocs\/op/gm;
  for (const m of r.stdout.matchAll(line)) {
    const list = runs.get(m[1]!) ?? [];
    list.push({ nsPerOp: Number(m[2]), bytesPerOp: Number(m[3]), allocsPerOp: Number(m[4]) });
    runs.set(m[1]!, list);
  }
  if (runs.size === 0) return { missing: `no Go anchor: no benchmark lines in ${JSON.stringify(r.stdout)}` };
  return { runs, version: version.stdout.trim() };
}

/** The runs of both anchors together (one taken before our figures, one after). */
export function mergeAnchors(a: GoAnchor, b: GoAnchor): GoAnchor {
  if ("missing" in a) return a;
  if ("missing" in b) return b;
  const runs = new Map(a.runs);
  for (const [name, list] of b.runs) runs.set(name, [...(runs.get(name) ?? []), ...list]);
  return { runs, version: a.version };
}

/** A benchmark's medians over its runs; throws if the anchor has no such benchmark. */
export function goFigure(anchor: { runs: Map<string, GoFigure[]> }, name: string): GoFigure {
  const list = anchor.runs.get(name);
  if (!list) throw new Error(`the Go anchor has no Benchmark${name}`);
  return {
    nsPerOp: median(list.map((f) => f.nsPerOp)),
    bytesPerOp: median(list.map((f) => f.bytesPerOp)),
    allocsPerOp: median(list.map((f) => f.allocsPerOp)),
  };
}
