/**
 * One home for errors: the package's top level stays small (every error class is in `errors`,
 * nothing else is an error there), every class in `errors` derives from SockdiagError with a code
 * of its own, and sockdiag's own objects used against their rules throw MisuseError — never
 * NetlinkProtocolError, which means the kernel broke the rules.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import * as sockdiag from "sockdiag";
import { NETLINK_SOCK_DIAG } from "../../src/diag/constants.js";
import { MessageWriter, NetlinkSocket } from "../../src/netlink/index.js";

const { errors } = sockdiag;

test("the top level holds at most 30 runtime names, none of them an error class", () => {
  const names = Object.keys(sockdiag);
  assert.ok(names.length <= 30, `${names.length}: ${names.join(", ")}`);
  assert.deepEqual(
    names.filter((n) => n.endsWith("Error")),
    [],
  );
});

test("errors: every class derives from SockdiagError, with its own name and a code", () => {
  const classes = Object.entries(errors);
  for (const [name, cls] of classes) {
    assert.equal(cls.name, name);
    assert.ok(cls === errors.SockdiagError || cls.prototype instanceof errors.SockdiagError, name);
  }
  for (const name of [
    "NamespacesFailedError",
    "MisuseError",
    "EmptySelectionError",
    "ConntrackUnavailableError",
  ])
    assert.ok(name in errors, `${name} is thrown, so it is exported`);
});

test("a writer overrun and a connection used after close are MisuseError", () => {
  const writer = new MessageWriter(Buffer.alloc(16));
  assert.throws(
    () => writer.begin(20, 1, 1).attrU32(1, 1),
    (err: unknown) => err instanceof errors.MisuseError && err.code === "ERR_SOCKDIAG_MISUSE",
  );
  assert.throws(() => new MessageWriter(Buffer.alloc(64)).end(), errors.MisuseError);
  const conn = NetlinkSocket.open(NETLINK_SOCK_DIAG);
  conn.close();
  assert.throws(() => conn.send(Buffer.alloc(16), 16), errors.MisuseError);
});
