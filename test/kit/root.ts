/**
 * The root guard for integration tests: they need root with CAP_NET_ADMIN (sock_diag destroy, `ip`)
 * and CAP_SYS_ADMIN (setns, mounting namespaces). Without them a test FAILS in CI
 * (process.env.CI === "true"), where a skip would hide a broken setup, and otherwise skips loudly.
 */
import { readFileSync } from "node:fs";
import { describe, type TestContext, test } from "node:test";

/** CAP_NET_ADMIN from linux/capability.h. */
export const CAP_NET_ADMIN = 12;
/** CAP_SYS_ADMIN from linux/capability.h. */
export const CAP_SYS_ADMIN = 21;

/**
 * privilegeProblem says why this process cannot run the integration tests ("not root (uid 1000)",
 * "lacks CAP_NET_ADMIN"), or undefined when it can. Reads CapEff from /proc/self/status.
 */
export function privilegeProblem(): string | undefined {
  const uid = process.getuid?.();
  if (uid !== 0) return `not root (uid ${uid})`;
  const capEff = /^CapEff:\s*([0-9a-f]+)$/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
  if (capEff === undefined) return "cannot read CapEff from /proc/self/status";
  const caps = BigInt(`0x${capEff}`);
  const needed: ReadonlyArray<[string, number]> = [
    ["CAP_NET_ADMIN", CAP_NET_ADMIN],
    ["CAP_SYS_ADMIN", CAP_SYS_ADMIN],
  ];
  const missing = needed.filter(([, bit]) => ((caps >> BigInt(bit)) & 1n) === 0n).map(([name]) => name);
  return missing.length > 0 ? `lacks ${missing.join(" and ")}` : undefined;
}

/** inCI tells whether process.env.CI is "true", where missing privileges are a failure. */
export function inCI(): boolean {
  return process.env.CI === "true";
}

function skipMessage(what: string, problem: string): string {
  return `SKIPPED: needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN: ${what} (${problem})`;
}

/**
 * requireRoot guards one test: it returns true when the process is privileged. Otherwise it throws
 * in CI (failing the test) or marks the test skipped, says so on stderr and returns false:
 * `if (!requireRoot(t)) return;`.
 */
export function requireRoot(t: TestContext): boolean {
  const problem = privilegeProblem();
  if (problem === undefined) return true;
  if (inCI()) throw new Error(`test "${t.name}" needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN: ${problem}`);
  const message = skipMessage(`test "${t.name}"`, problem);
  process.stderr.write(`\n*** ${message} ***\n\n`);
  t.skip(message);
  return false;
}

/**
 * describeAsRoot is `describe` for a suite of integration tests: privileged, it is plain describe;
 * otherwise, in CI, the suite is one failing test, and outside CI it is skipped with a loud stderr line.
 */
export function describeAsRoot(name: string, fn: () => void | Promise<void>): void {
  const problem = privilegeProblem();
  if (problem === undefined) {
    describe(name, fn);
  } else if (inCI()) {
    describe(name, () => {
      test("has the privileges it needs", () => {
        throw new Error(`suite "${name}" needs root with CAP_NET_ADMIN and CAP_SYS_ADMIN: ${problem}`);
      });
    });
  } else {
    const message = skipMessage(`suite "${name}"`, problem);
    process.stderr.write(`\n*** ${message} ***\n\n`);
    describe(name, { skip: message }, fn);
  }
}
