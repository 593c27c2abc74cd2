/**
 * listSockets({ netns: "all" }) never drops failures: run without CAP_SYS_ADMIN, where every
 * pinned namespace fails to be entered, it throws NamespacesFailedError carrying the sockets it
 * listed and every failure — where it once returned the host's sockets and no error.
 */
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import {
  describeAsRoot,
  startFailure,
  startUdpScene,
  type UdpScene,
  WITHOUT_CAPABILITIES,
} from "../kit/index.js";

const run = promisify(execFile);
const ENTRY = fileURLToPath(new URL("../../src/index.js", import.meta.url));

describeAsRoot("listSockets over every namespace, when namespaces fail", () => {
  let scene: UdpScene;
  before(async () => {
    scene = await startUdpScene("listfail");
  });
  after(async () => {
    await scene?.stop();
  });

  test("without CAP_SYS_ADMIN: NamespacesFailedError with the failures and the sockets listed", async () => {
    const script = `
      const sd = await import(${JSON.stringify(ENTRY)});
      try {
        const sockets = sd.listSockets({ netns: "all", protocols: ["udp"] });
        console.log(JSON.stringify({ returned: sockets.length }));
      } catch (e) {
        console.log(JSON.stringify({ name: e.name, code: e.code, sockets: e.sockets?.length,
          failures: (e.failures ?? []).filter((f) => !f.note).map((f) => [f.netns, f.error.message]) }));
      }`;
    const [cmd, ...args] = [...WITHOUT_CAPABILITIES, process.execPath, "--input-type=module", "-e", script];
    const r = await run(cmd!, args).catch((err: { stderr?: string }) => {
      throw new Error(startFailure(err.stderr ?? "") ?? String(err));
    });
    const out = JSON.parse(r.stdout) as {
      name?: string;
      code?: string;
      sockets?: number;
      failures?: [string, string][];
    };
    assert.equal(out.name, "NamespacesFailedError", r.stdout);
    assert.equal(out.code, "ERR_SOCKDIAG_NAMESPACES_FAILED");
    assert.equal(typeof out.sockets, "number", "the host's sockets come with the error");
    assert.ok(
      out.failures?.some(([netns, message]) => netns === scene.ns.name && /CAP_SYS_ADMIN/.test(message)),
      JSON.stringify(out.failures),
    );
  });
});
