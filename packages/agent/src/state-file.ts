/**
 * StateFile: the backends the agent would terminate if they went away, kept in `--state-dir` so
 * that a removal that happens while the agent is down (restart, upgrade, crash) is still acted on
 * when it starts again. Written atomically: a temporary file in the same directory, fsync, rename,
 * fsync of the directory — a reader sees the old set or the new one, never half of one.
 */
import { mkdir, open, readFile, rename, rm } from "node:fs/promises";
import { join } from "node:path";
import { type AgentBackend, asBackend } from "./backend.js";

/** A backend in the saved set, with the Services that listed it (for the log when it is terminated). */
export interface SavedBackend {
  backend: AgentBackend;
  services: string[];
}

/** What load() found. */
export interface LoadedState {
  backends: SavedBackend[];
  /** Set when the file exists but could not be used (unreadable, not JSON, wrong version). */
  problem?: string;
  /** Entries of the file that were not valid backends and were left out. */
  invalid: number;
}

const FILE = "backends.json";
const VERSION = 1;

export class StateFile {
  readonly path: string;
  private writing: Promise<void> = Promise.resolve();
  private next: SavedBackend[] | undefined;

  constructor(readonly dir: string) {
    this.path = join(dir, FILE);
  }

  /** Read the saved set; no file yet is an empty set. Never throws. */
  async load(): Promise<LoadedState> {
    let text: string;
    try {
      text = await readFile(this.path, "utf8");
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === "ENOENT") return { backends: [], invalid: 0 };
      return { backends: [], invalid: 0, problem: `cannot read ${this.path}: ${(err as Error).message}` };
    }
    let data: unknown;
    try {
      data = JSON.parse(text);
    } catch (err) {
      return { backends: [], invalid: 0, problem: `${this.path} is not JSON: ${(err as Error).message}` };
    }
    const { version, backends } = (data ?? {}) as { version?: unknown; backends?: unknown };
    if (version !== VERSION || !Array.isArray(backends))
      return { backends: [], invalid: 0, problem: `${this.path} is not a version ${VERSION} state file` };
    const out: SavedBackend[] = [];
    let invalid = 0;
    for (const entry of backends) {
      const backend = asBackend(entry);
      const services = (entry as { services?: unknown }).services;
      if (!backend) invalid++;
      else
        out.push({
          backend,
          services: Array.isArray(services) ? services.filter((s) => typeof s === "string") : [],
        });
    }
    return { backends: out, invalid };
  }

  /**
   * Replace the saved set. Saves run one at a time; a save asked for while one is writing replaces
   * any other waiting one, so that only the newest set is written next. Rejects when writing fails.
   */
  save(backends: readonly SavedBackend[]): Promise<void> {
    const first = this.next === undefined;
    this.next = [...backends];
    if (!first) return this.writing;
    this.writing = this.writing
      .catch(() => undefined)
      .then(() => {
        const set = this.next!;
        this.next = undefined;
        return this.write(set);
      });
    return this.writing;
  }

  private async write(backends: readonly SavedBackend[]): Promise<void> {
    await mkdir(this.dir, { recursive: true });
    const body = {
      version: VERSION,
      savedAt: new Date().toISOString(),
      backends: backends.map(({ backend, services }) => ({ ...backend, services })),
    };
    const tmp = join(this.dir, `.${FILE}.${process.pid}.tmp`);
    const file = await open(tmp, "w", 0o600);
    try {
      await file.writeFile(`${JSON.stringify(body)}\n`);
      await file.sync();
    } catch (err) {
      await file.close();
      await rm(tmp, { force: true });
      throw err;
    }
    await file.close();
    await rename(tmp, this.path);
    const dir = await open(this.dir, "r");
    try {
      await dir.sync();
    } finally {
      await dir.close();
    }
  }
}
