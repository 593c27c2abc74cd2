/**
 * Input that can only be a typo is refused before anything is sent, naming what is wrong, and
 * changes nothing (sockets and conntrack entries counted before and after): a backend at the
 * unspecified or broadcast address (terminate-backend, BackendTerminator), a port
 * with a leading zero that an ss filter would read as another port ("066": 54 there, 66 here), a
 * conntrack mark mask without a mark.
 */
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { deleteConntrack, listConntrack } from "../../src/conntrack/index.js";
import { QueryError } from "../../src/options/index.js";
import { listSockets } from "../../src/sockets/index.js";
import { AddressError, BackendTerminator } from "../../src/terminator/index.js";
import {
  describeAsRoot,
  type HeldSocket,
  insertConntrack,
  startUdpScene,
  type UdpScene,
} from "../kit/index.js";
import { sockdiag } from "./cli.js";

const NO_PEER = ["0.0.0.0", "255.255.255.255", "[::]", "[::ffff:0.0.0.0]"];

describeAsRoot("refused input changes nothing", () => {
  let scene: UdpScene;
  let clients: HeldSocket[];
  before(async () => {
    scene = await startUdpScene("refused");
    // Receivers on ports 54 and 66, a client of each: what "066" means in a filter and here.
    for (const port of [54, 66]) {
      await scene.holder.open({ kind: "udp", bind: { address: "127.0.0.1", port } });
    }
    clients = [
      ...(await scene.holder.open({ kind: "udp", connect: { address: "127.0.0.1", port: 54 } })),
      ...(await scene.holder.open({ kind: "udp", connect: { address: "127.0.0.1", port: 66 } })),
    ];
    insertConntrack(scene.ns.path, [
      {
        proto: 17,
        orig: { src: "10.66.1.1", dst: "10.96.0.10", sport: 40000, dport: 53 },
        reply: { src: "10.66.0.5", dst: "10.66.1.1", sport: 66, dport: 40000 },
        mark: 3,
      },
    ]);
  });
  after(async () => {
    await scene?.stop();
  });

  /** Connected UDP sockets and conntrack entries in the namespace; both clients answer alive. */
  async function census(): Promise<[number, number]> {
    const errnos = await scene.holder.poll(clients);
    assert.ok(
      errnos.every((e) => e === 0 || e === 11),
      `a client was destroyed: ${errnos}`,
    );
    const sockets = listSockets({ netns: scene.ns.name, protocols: ["udp"], filter: "dst 127.0.0.1" });
    return [sockets.length, listConntrack({ netns: scene.ns.name }).length];
  }

  test("terminate-backend refuses the unspecified and broadcast addresses and a port like 066", async () => {
    const before = await census();
    assert.deepEqual(before, [2, 1]);
    for (const address of NO_PEER) {
      const run = await sockdiag(["terminate-backend", "--netns", scene.ns.path, `${address}:66`]);
      assert.equal(run.code, 2, run.stderr);
      assert.match(run.stderr, /(unspecified|broadcast) address/);
    }
    const octal = await sockdiag(["terminate-backend", "--netns", scene.ns.path, "127.0.0.1:066"]);
    assert.equal(octal.code, 2, octal.stderr);
    assert.match(
      octal.stderr,
      /port "066" has a leading zero: read as decimal it is 66, in an ss filter \(octal\) it is port 54/,
    );
    assert.deepEqual(await census(), before);
    // Read the same both ways: accepted.
    const plain = await sockdiag([
      "terminate-backend",
      "--netns",
      scene.ns.path,
      "--dry-run",
      "-j",
      "127.0.0.1:07",
    ]);
    assert.equal(plain.code, 0, plain.stderr);
  });

  test("BackendTerminator refuses them too, before any namespace is visited", async () => {
    const before = await census();
    let visited = 0;
    const terminator = new BackendTerminator({ netns: scene.ns.name, onNamespace: () => visited++ });
    for (const address of ["0.0.0.0", "255.255.255.255", "::", "::ffff:255.255.255.255"])
      assert.throws(
        () => terminator.terminate({ address, port: 66 }),
        (err: unknown) => err instanceof AddressError && /(unspecified|broadcast) address/.test(err.message),
        address,
      );
    assert.equal(visited, 0);
    assert.deepEqual(await census(), before);
  });

  test("conntrack rm refuses a port like 066 and a mask without a mark", async () => {
    const before = await census();
    const octal = await sockdiag(["conntrack", "rm", "-N", scene.ns.name, "--reply-src", "10.66.0.5:066"]);
    assert.equal(octal.code, 2, octal.stderr);
    assert.match(octal.stderr, /--reply-src: port "066" has a leading zero/);
    assert.throws(
      () => deleteConntrack({ netns: scene.ns.name, markMask: 255 }),
      (err: unknown) => err instanceof QueryError && err.field === "markMask",
    );
    assert.throws(
      () => deleteConntrack({ netns: scene.ns.name, anyOf: [{ mark: 3 }, { markMask: 1 }] }),
      (err: unknown) => err instanceof QueryError && err.field === "anyOf[1].markMask",
    );
    assert.deepEqual(await census(), before);
    // The same flags with a real address still delete.
    const run = await sockdiag(["conntrack", "rm", "-N", scene.ns.name, "--reply-src", "10.66.0.5:66"]);
    assert.equal(run.code, 0, run.stderr);
    assert.deepEqual(await census(), [2, 0]);
  });

  test("conntrack rm selects the unspecified and broadcast addresses as conntrack -D does", async () => {
    // Real entries carry them: a DHCP client's 0.0.0.0:68 -> 255.255.255.255:67.
    const dhcp = {
      proto: 17,
      orig: { src: "0.0.0.0", dst: "255.255.255.255", sport: 68, dport: 67 },
      reply: { src: "255.255.255.255", dst: "0.0.0.0", sport: 67, dport: 68 },
    };
    for (const flags of [
      ["-s", "0.0.0.0"],
      ["-d", "255.255.255.255"],
    ]) {
      insertConntrack(scene.ns.path, [dhcp]);
      const before = await census();
      const run = await sockdiag(["conntrack", "rm", "-N", scene.ns.name, ...flags, "-j"]);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(
        (JSON.parse(run.stdout) as { report: { deleted: number } }).report.deleted,
        1,
        flags.join(" "),
      );
      assert.deepEqual(await census(), [before[0], before[1] - 1], "only the DHCP entry went");
    }
  });
});
