/**
 * A caller's callbacks in sockdiag/promises keep the call's contract whatever they do: an answer
 * that cannot cross to the worker, a predicate that never settles, a logger that needs its `this`.
 * The call settles with a typed error or a report that balances, nothing is destroyed on a bad
 * answer, and the next call works. Real sockets in a throwaway namespace.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import pino from "pino";
import * as sync from "sockdiag";
import * as promises from "sockdiag/promises";
import { describeAsRoot } from "../kit/index.js";
import { balances, orRejection, type Report, useCallbackScene } from "./callback-scene.js";

describeAsRoot("sockdiag/promises callbacks keep the contract", () => {
  const scene = useCallbackScene("promises-callbacks");
  const { query, connected, backend } = scene;

  const unsendable: [string, () => unknown][] = [
    ["a function", () => () => true],
    ["a Symbol", () => Symbol("yes")],
    ["a WeakMap", () => new WeakMap()],
    ["an object with a method", () => ({ destroy: true, valueOf: () => 1 })],
    [
      "a cyclic object with a method",
      () => {
        const answer: Record<string, unknown> = {};
        answer.self = answer;
        answer.valueOf = () => 1;
        return answer;
      },
    ],
  ];

  for (const [what, answer] of unsendable) {
    test(`a predicate answering ${what} settles the call with PredicateError naming it; nothing destroyed`, async () => {
      const err = await promises
        .destroySockets({ ...query(), predicate: () => answer() as boolean })
        .then(...orRejection);
      assert.ok(err instanceof sync.errors.PredicateError, `PredicateError: ${err}`);
      assert.ok(err.cause instanceof sync.errors.ForeignError, `cause: ${err.cause}`);
      assert.match(err.message, /predicate returned .*cannot be sent to sockdiag's worker thread/);
      balances(err.report as Report);
      assert.equal((err.report as Report).destroyed, 0);
      assert.equal(connected(), scene.clients);
    });
  }

  test("a predicate answering an object whose getter throws is a PredicateError", async () => {
    const answer = {
      get yes(): boolean {
        throw new Error("no getting this");
      },
    };
    const err = await promises
      .destroySockets({ ...query(), predicate: () => answer as unknown as boolean })
      .then(...orRejection);
    assert.ok(err instanceof sync.errors.PredicateError, `PredicateError: ${err}`);
    assert.match(err.message, /no getting this/);
    balances(err.report as Report);
    assert.equal(connected(), scene.clients);
  });

  test("a predicate that throws what cannot cross is a PredicateError naming it", async () => {
    const err = await promises
      .destroySockets({
        ...query(),
        predicate: () => {
          throw Symbol("no");
        },
      })
      .then(...orRejection);
    assert.ok(err instanceof sync.errors.PredicateError, `PredicateError: ${err}`);
    assert.match(err.message, /predicate threw a Symbol/);
    assert.equal(connected(), scene.clients);
  });

  test("an async predicate answering false keeps every socket", async () => {
    const report = await new promises.BackendTerminator({
      netns: scene.netns,
      conntrack: false,
      predicate: async () => false,
    }).terminate(backend());
    assert.equal(report.total.destroyed, 0);
    assert.equal(report.ok, true);
    assert.equal(connected(), scene.clients);
  });

  const notBooleans: [string, () => unknown][] = [
    ['"false"', async () => "false"],
    ["1", async () => 1],
    ["1n", async () => 1n],
    ["an object", async () => ({})],
    [
      '"false" through a thenable',
      // biome-ignore lint/suspicious/noThenProperty: a thenable is the case under test.
      () => ({ then: (resolve: (v: unknown) => void) => resolve("false") }),
    ],
  ];

  for (const [what, predicate] of notBooleans) {
    test(`a predicate settling to ${what} is a predicate that threw: PredicateError, balanced, nothing destroyed`, async () => {
      const err = await promises
        .destroySockets({ ...query(), predicate: predicate as () => Promise<boolean> })
        .then(...orRejection);
      assert.ok(err instanceof sync.errors.PredicateError, `PredicateError: ${err}`);
      balances(err.report as Report);
      assert.equal((err.report as Report).destroyed, 0);
      const report = await new promises.BackendTerminator({
        netns: scene.netns,
        conntrack: false,
        predicate: predicate as () => Promise<boolean>,
      }).terminate(backend());
      assert.equal(report.namespaces[0]?.error?.name, "PredicateError");
      assert.equal(report.total.destroyed, 0);
      assert.equal(connected(), scene.clients);
    });
  }

  /** A logger whose methods need their `this`, as a class keeps state. */
  class Lines {
    readonly lines: string[] = [];
    info(message: string) {
      this.lines.push(`info ${message}`);
    }
    warn(message: string) {
      this.lines.push(`warn ${message}`);
    }
  }

  const terminate = (config: promises.AsyncTerminatorConfig) =>
    new promises.BackendTerminator({
      netns: scene.netns,
      conntrack: false,
      dryRun: true,
      ...config,
    }).terminate({
      address: "127.0.0.1",
      port: backend().port,
    });

  test("a logger's methods are called with the logger as this: a class, a plain object", async () => {
    const logger = new Lines();
    const plain = {
      lines: [] as string[],
      info(message: string) {
        this.lines.push(message);
      },
      warn(message: string) {
        this.lines.push(message);
      },
    };
    for (const [of, lines] of [
      [logger, logger.lines],
      [plain, plain.lines],
    ] as const) {
      const report = await terminate({ logger: of });
      assert.deepEqual(report.callbackErrors, []);
      assert.ok(
        lines.some((l) => l.includes("terminated sockets")),
        lines.join("; "),
      );
    }
    const viaUdp = new Lines();
    await promises.terminateUDPConnectionsToBackend(`127.0.0.1:${backend().port}`, {
      netns: scene.netns,
      conntrack: false,
      dryRun: true,
      logger: viaUdp,
    });
    assert.ok(
      viaUdp.lines.some((l) => l.includes("terminated sockets")),
      viaUdp.lines.join("; "),
    );
  });

  test("a pino logger logs through sockdiag/promises", async () => {
    const written: string[] = [];
    const logger = pino({ level: "info" }, { write: (line: string) => void written.push(line) });
    const report = await terminate({ logger });
    assert.deepEqual(report.callbackErrors, []);
    const messages = written.map((l) => (JSON.parse(l) as { msg: string }).msg);
    assert.ok(messages.includes("terminated sockets"), messages.join("; "));
  });

  test("a function the worker cannot receive in a configuration is a QueryError naming the field", async () => {
    class Protocol {
      toString = () => "udp";
    }
    const err = await terminate({ protocol: new Protocol() as unknown as "udp" }).then(...orRejection);
    assert.ok(err instanceof sync.errors.QueryError, `QueryError: ${err}`);
    assert.equal(err.field, "protocol");
    assert.equal(err.value, "a Protocol");
    assert.equal(connected(), scene.clients);
  });

  test("onNamespace answering a function is reported in callbackErrors; the termination goes on", async () => {
    const report = await new promises.BackendTerminator({
      netns: scene.netns,
      conntrack: false,
      dryRun: true,
      onNamespace: () => (() => {}) as unknown as undefined,
    }).terminate(backend());
    assert.equal(report.total.matched, scene.clients);
    assert.deepEqual(
      report.callbackErrors.map((e) => [e.name, /onNamespace returned a function/.test(e.message)]),
      [["ForeignError", true]],
    );
  });
});
