/**
 * `sockdiag terminate-backend` against sockets that share 4-tuples, in a pinned namespace: IPv4,
 * IPv6 (v4-mapped and native) and dual-stack SO_REUSEPORT groups connected to one backend. None may
 * stay connected, the clients of the other backend are untouched, and the exit status is 0.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { fromPath } from "../../src/netns/index.js";
import { listSockets } from "../../src/sockets/index.js";
import { Errno } from "../../src/sys/index.js";
import type { HeldSocket, SocketSpec } from "../kit/index.js";
import { describeAsRoot } from "../kit/root.js";
import { Scene } from "../terminator/scene.js";
import { sockdiag } from "./cli.js";

interface JsonReport {
  total: {
    matched: number;
    destroyed: number;
    wouldDestroy: number;
    gone: number;
    failed: number;
    skipped: number;
  };
  ok: boolean;
}

describeAsRoot("sockdiag terminate-backend and SO_REUSEPORT groups", () => {
  let scene: Scene;

  before(async () => {
    scene = await Scene.start("rport", 1);
  });
  after(async () => {
    await scene?.stop();
  });

  test("IPv4, IPv6 and dual-stack groups connected to one backend: none stays connected, exit 0", async () => {
    const name = scene.pinnedNames[0]!;
    const { holder } = scene.node(name);
    // Below the ephemeral range, where the kernel put the backends A and B.
    let port = 22000;
    const group = (
      family: "inet" | "inet6",
      local: string,
      to: string,
      backend: number,
      n: number,
      at = port++,
    ) => {
      const spec: SocketSpec = {
        kind: "udp",
        family,
        reusePort: true,
        bind: { address: local, port: at },
        connect: { address: to, port: backend },
      };
      return holder.open(spec, n);
    };
    const { portA, portB } = scene;
    const v4 = await group("inet", "127.0.0.1", "127.0.0.1", portA, 3);
    const mapped = await group("inet6", "127.0.0.1", "127.0.0.1", portA, 3);
    const dualPort = port++;
    const dual = [
      ...(await group("inet", "127.0.0.1", "127.0.0.1", portA, 2, dualPort)),
      ...(await group("inet6", "127.0.0.1", "127.0.0.1", portA, 2, dualPort)),
    ];
    const v6 = await group("inet6", "::1", "::1", portA, 3);
    // Bystanders: the same kinds of groups, connected to backend B.
    const bystanders: HeldSocket[] = [
      ...(await group("inet", "127.0.0.1", "127.0.0.1", portB, 2)),
      ...(await group("inet6", "127.0.0.1", "127.0.0.1", portB, 2)),
      ...(await group("inet6", "::1", "::1", portB, 2)),
    ];

    const terminate = (backend: string) =>
      sockdiag(["terminate-backend", backend, "--netns-dir", scene.dir, "--no-discover", "-j"]);
    const r4 = await terminate(`127.0.0.1:${portA}`);
    const r6 = await terminate(`[::1]:${portA}`);
    for (const r of [r4, r6]) assert.equal(r.code, 0, r.stdout + r.stderr);
    const [j4, j6] = [r4, r6].map((r) => JSON.parse(r.stdout) as JsonReport);
    const ipv4Targets = [...v4, ...mapped, ...dual];
    assert.deepEqual(j4?.total, {
      matched: ipv4Targets.length,
      destroyed: ipv4Targets.length,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });
    assert.deepEqual(j6?.total, {
      matched: v6.length,
      destroyed: v6.length,
      wouldDestroy: 0,
      gone: 0,
      failed: [],
      skipped: 0,
    });

    await holder.waitFor([...ipv4Targets, ...v6], "ECONNABORTED");
    assert.deepEqual(
      await holder.poll(bystanders),
      bystanders.map(() => Errno.EAGAIN),
    );
    using ns = fromPath(scene.pinPath(name));
    const connectedToA = listSockets({ netns: ns, protocols: ["udp"], filter: `dport = :${portA}` });
    assert.deepEqual(connectedToA, []);
  });
});
