/**
 * vsock, tipc and xdp: sockdiag sends their dumps but decodes no answer yet. A kernel with the
 * handler (this machine has none: a fake connection stands in) must not stop a listing of
 * everything: the answer is read to its end, refused as a kernel without the handler is, skipped
 * where unsupported protocols may be, and the dumps after it still run on the same connection.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import type { Socket } from "../../src/diag/socket.js";
import { Dumper } from "../../src/sockets/dump.js";
import { UnsupportedProtocolError } from "../../src/sockets/errors.js";
import { planQuery } from "../../src/sockets/query.js";
import { NETLINK_DIAG_MSG, pack } from "../diag/layout.js";
import { doneAnswer, FakeNetlink, partAnswer, type SentMessage } from "../kit/index.js";

const AF_VSOCK = 40;
const AF_NETLINK = 16;

/** vsock's dump answers two sockets (whatever their layout); netlink's one socket. */
function kernel(): FakeNetlink {
  return new FakeNetlink({
    respond: (m: SentMessage) => {
      const family = m.payload[0];
      if (family === AF_VSOCK)
        return [partAnswer(m, 20, Buffer.alloc(32)), partAnswer(m, 20, Buffer.alloc(32)), doneAnswer(m)];
      if (family === AF_NETLINK)
        return [
          partAnswer(
            m,
            20,
            pack(NETLINK_DIAG_MSG, { ndiag_family: AF_NETLINK, ndiag_type: 3, ndiag_ino: 77 }),
          ),
          doneAnswer(m),
        ];
      return [doneAnswer(m)];
    },
  });
}

test("an answered vsock dump is skipped under ignoreUnsupported, and the next dump still runs", () => {
  const plan = planQuery({ protocols: ["vsock", "netlink"], states: ["all"], ignoreUnsupported: true });
  const got: Socket[] = [];
  new Dumper(kernel()).each(plan, { attributes: false }, (s) => got.push(s));
  assert.deepEqual([...plan.unsupported], ["vsock"]);
  assert.deepEqual(
    got.map((s) => [s.protocol, s.inode]),
    [["netlink", 77]],
  );
});

test("an answered vsock dump asked for alone is an UnsupportedProtocolError saying it is not decoded", () => {
  const plan = planQuery({ protocols: ["vsock"], states: ["all"] });
  assert.throws(
    () => new Dumper(kernel()).each(plan, { attributes: false }, () => {}),
    (err: unknown) =>
      err instanceof UnsupportedProtocolError &&
      err.protocol === "vsock" &&
      /does not decode vsock sockets yet \(this kernel's vsock_diag answered\)/.test(err.message),
  );
});
