import assert from "node:assert/strict";
import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, describe, test } from "node:test";
import { StateFile } from "../src/state-file.js";

const dirs: string[] = [];
async function scratch(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), "sockdiag-agent-state-"));
  dirs.push(dir);
  return dir;
}
after(() => Promise.all(dirs.map((d) => rm(d, { recursive: true, force: true }))));

const a = {
  backend: { address: "10.0.0.1", port: 53, protocol: "udp" as const },
  services: ["kube-system/kube-dns"],
};
const b = { backend: { address: "fd00::5", port: 53, protocol: "tcp" as const }, services: [] };

describe("StateFile", () => {
  test("no file is an empty set; a saved set loads back; the directory is made", async () => {
    const dir = join(await scratch(), "nested", "state");
    const state = new StateFile(dir);
    assert.deepEqual(await state.load(), { backends: [], invalid: 0 });
    await state.save([a, b]);
    assert.deepEqual(await new StateFile(dir).load(), { backends: [a, b], invalid: 0 });
    assert.deepEqual(await readdir(dir), ["backends.json"], "a temporary file was left behind");
  });

  test("saves asked for while one is writing: the newest set is what ends on disk", async () => {
    const state = new StateFile(await scratch());
    await Promise.all([state.save([a]), state.save([b]), state.save([a, b]), state.save([b])]);
    assert.deepEqual((await state.load()).backends, [b]);
  });

  test("an unusable file is reported, not thrown; invalid entries are counted and left out", async () => {
    const dir = await scratch();
    const state = new StateFile(dir);
    await writeFile(state.path, "{ not json");
    const broken = await state.load();
    assert.deepEqual(broken.backends, []);
    assert.match(broken.problem ?? "", /not JSON/);
    await writeFile(state.path, JSON.stringify({ version: 7, backends: [] }));
    assert.match((await state.load()).problem ?? "", /not a version 1 state file/);
    await writeFile(
      state.path,
      JSON.stringify({
        version: 1,
        backends: [
          { address: "10.0.0.1", port: 53, protocol: "udp", services: ["kube-system/kube-dns"] },
          { address: "10.0.0.300", port: 53, protocol: "udp" },
          { address: "10.0.0.2", port: 0, protocol: "udp" },
          { address: "10.0.0.2", port: 53, protocol: "sctp" },
        ],
      }),
    );
    assert.deepEqual(await state.load(), { backends: [a], invalid: 3 });
  });

  test("the file is written whole: JSON with a version, one line", async () => {
    const state = new StateFile(await scratch());
    await state.save([a]);
    const text = await readFile(state.path, "utf8");
    assert.ok(text.endsWith("}\n"));
    const parsed = JSON.parse(text) as { version: number; backends: unknown[] };
    assert.equal(parsed.version, 1);
    assert.equal(parsed.backends.length, 1);
  });
});
