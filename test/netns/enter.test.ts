import assert from "node:assert/strict";
import { closeSync, readlinkSync } from "node:fs";
import { describe, test } from "node:test";
import {
  create,
  current,
  threadNetns as moduleThreadNetns,
  NetnsAsyncCallbackError,
  NetnsError,
  NetnsPoisonedError,
  NetnsRestoreError,
  openNetlinkIn,
  runIn,
  ThreadNetns,
  type ThreadSyscalls,
} from "../../src/netns/index.js";
import { Errno, ioctlInt, SysError } from "../../src/sys/index.js";
import { linkOf, rootOnly, stayHome, threadNetns } from "./helpers.js";

const NETLINK_ROUTE = 0;

// linux/sockios.h: SIOCGSKNS answers a new descriptor of the network namespace a socket belongs to.
const SIOCGSKNS = 0x894c;

/** The "net:[ino]" of the namespace socket `fd` lives in, as the kernel reports it. */
function socketNetns(fd: number): string {
  const nsfd = ioctlInt(fd, SIOCGSKNS);
  try {
    return readlinkSync(`/proc/self/fd/${nsfd}`);
  } finally {
    closeSync(nsfd);
  }
}

describe("runIn and the restore discipline", { skip: rootOnly() }, () => {
  stayHome();

  test("runIn runs the function inside the namespace and returns its value", () => {
    using ns = create();
    assert.notEqual(linkOf(ns), threadNetns());
    assert.equal(
      runIn(ns, () => threadNetns()),
      linkOf(ns),
    );
  });

  test("a throwing callback's error comes out unchanged, the thread restored", () => {
    using ns = create();
    const boom = new Error("boom");
    assert.throws(
      () =>
        runIn(ns, () => {
          throw boom;
        }),
      (err) => err === boom,
    );
  });

  test("nesting restores to the enclosing namespace, also when the inner callback throws", () => {
    using outer = create();
    using inner = create();
    const seen = runIn(outer, () => {
      const before = threadNetns();
      const deep = runIn(inner, () => threadNetns());
      const between = threadNetns();
      assert.throws(() =>
        runIn(inner, () => {
          throw new Error("inner");
        }),
      );
      return [before, deep, between, threadNetns()];
    });
    assert.deepEqual(seen, [linkOf(outer), linkOf(inner), linkOf(outer), linkOf(outer)]);
  });

  test("create() and current() inside runIn leave the thread where runIn put it", () => {
    using outer = create();
    const [made, here, after] = runIn(outer, () => [create(), current(), threadNetns()] as const);
    try {
      assert.equal(after, linkOf(outer));
      assert.ok(here.equals(outer));
      assert.ok(!made.equals(outer));
    } finally {
      made.close();
      here.close();
    }
  });

  test("an async callback is refused with a typed error after the restore", async () => {
    using ns = create();
    let inside = "";
    let later: Promise<unknown> | undefined;
    assert.throws(
      () =>
        runIn(ns, () => {
          inside = threadNetns();
          later = (async () => threadNetns())();
          return later;
        }),
      NetnsAsyncCallbackError,
    );
    assert.equal(inside, linkOf(ns));
    assert.equal(await later, linkOf(ns), "the async function's synchronous part ran inside");
    // biome-ignore lint/suspicious/noThenProperty: a bare thenable is what runIn must recognise.
    const thenable = { then() {} };
    assert.throws(() => runIn(ns, () => thenable), NetnsAsyncCallbackError);
  });

  test("a closed handle cannot be entered and nothing moves", () => {
    const ns = create();
    ns.close();
    let ran = false;
    assert.throws(
      () =>
        runIn(ns, () => {
          ran = true;
        }),
      NetnsError,
    );
    assert.equal(ran, false);
  });

  test("openNetlinkIn opens a socket that lives in the namespace, not in the caller's", () => {
    using ns = create();
    using conn = openNetlinkIn(ns, NETLINK_ROUTE);
    assert.equal(socketNetns(conn.fd), linkOf(ns));
    using here = openNetlinkIn(undefined, NETLINK_ROUTE);
    assert.equal(socketNetns(here.fd), threadNetns());
  });
});

describe("failed moves (injected system calls)", { skip: rootOnly() }, () => {
  stayHome();

  /** Syscalls that never move the thread; `fail(n)` makes the n-th setns (1-based) fail with `errno`. */
  function fakeSyscalls(failAt: number, errno: number): ThreadSyscalls & { calls: number } {
    const sys = {
      calls: 0,
      setns(): void {
        sys.calls++;
        if (sys.calls === failAt) throw new SysError("setns", errno);
      },
      unshare(): void {},
    };
    return sys;
  }

  test("a refused enter names the missing capability, does not run the callback, does not poison", () => {
    const mover = new ThreadNetns(fakeSyscalls(1, Errno.EPERM));
    using ns = create();
    let ran = false;
    assert.throws(
      () =>
        mover.runIn(ns, () => {
          ran = true;
        }),
      (err: unknown) =>
        err instanceof NetnsError && err.cause instanceof SysError && /CAP_SYS_ADMIN/.test(err.message),
    );
    assert.equal(ran, false);
    assert.equal(mover.poison, undefined);
    assert.equal(
      mover.runIn(ns, () => 7),
      7,
    );
  });

  for (const callbackThrows of [false, true]) {
    test(`a failed restore is fatal and poisons every later operation (callback ${callbackThrows ? "throws" : "returns"})`, () => {
      const mover = new ThreadNetns(fakeSyscalls(2, Errno.EINVAL));
      using ns = create();
      assert.throws(
        () =>
          mover.runIn(ns, () => {
            if (callbackThrows) throw new Error("callback");
            return 1;
          }),
        (err: unknown) =>
          err instanceof NetnsRestoreError && /FATAL/.test(err.message) && err.entered === ns.label,
      );
      assert.ok(mover.poison instanceof NetnsRestoreError);
      assert.throws(() => mover.runIn(ns, () => 1), NetnsPoisonedError);
      assert.throws(() => mover.unshareNew(), NetnsPoisonedError);
      assert.throws(() => mover.assertUsable(), NetnsPoisonedError);
      assert.equal(moduleThreadNetns.poison, undefined, "the module's own mover is untouched");
    });
  }

  test("a failed restore after unshare is fatal too", () => {
    const mover = new ThreadNetns(fakeSyscalls(1, Errno.EINVAL));
    assert.throws(() => mover.unshareNew(), NetnsRestoreError);
    assert.throws(() => mover.unshareNew(), NetnsPoisonedError);
  });
});
