/**
 * The one pass (findConnectedSockets: a task_file iterator over every task's open files) against
 * a sock_diag walk of every namespace (listSockets with the destination as a kernel filter, one
 * namespace after another), finding the same sockets: host + 100 namespaces of 1,000 UDP sockets,
 * 10 each connected to the backend, on the default UDP table shared by all namespaces and on a
 * table per namespace. The first pass is timed apart: it reads the kernel's BTF and asks each found
 * socket its cookie (none was asked yet); later ones find the cookies made. Beside them, the
 * kernel's own walk of every task's files under a program that does nothing. Rounds in turns.
 */
import { loadavg } from "node:os";
import { Assembler } from "../src/bpf/asm.js";
import { findConnectedSockets, kernelLayout } from "../src/bpf/find.js";
import { loadIteratorProgram, readIterator } from "../src/bpf/iterator.js";
import { listSockets } from "../src/sockets/iterate.js";
import { close } from "../src/sys/socket.js";
import { manyNamespaces, withChildHash } from "./many.js";
import { fmt, median, recordGoal, row } from "./measure.js";

const COUNT = 100;
const PER_NAMESPACE = 1000;
const TARGETS = 10;
const ROUNDS = 7;
const BACKEND = { address: "127.0.0.1", port: 5354 };
const DST = `${BACKEND.address}:${BACKEND.port}`;

const LAYOUTS = [
  { short: "shared UDP table", entries: undefined },
  { short: "table per namespace", entries: 1024 },
] as const;

/** The kernel's own walk: a task_file program that returns at once, loaded, read and closed. */
export function emptyPass(): void {
  runFloor("sockdiag_empty", new Assembler().movImm(0, 0).exit().build());
}

/**
 * The least any pass finding sockets by their destination does: the kernel's walk under a program
 * that reads each socket file's `socket` and the first line of its `sock` (where the family,
 * ports, addresses and namespace are), and nothing else.
 */
export function sockReadingPass(): void {
  const f = kernelLayout().fields;
  const a = new Assembler();
  a.load(8, 6, 1, f.ctxFile.offset).jumpIf(6, "==", 0, "out");
  a.mov(1, 6).call("sock_from_file").jumpIf(0, "==", 0, "out");
  a.load(8, 2, 0, f.socketSk.offset).jumpIf(2, "==", 0, "out");
  a.load(2, 3, 2, f.family.offset);
  a.label("out").movImm(0, 0).exit();
  runFloor("sockdiag_floor", a.build());
}

function runFloor(name: string, insns: Buffer): void {
  const progFd = loadIteratorProgram({ name, insns, attachBtfId: kernelLayout().attachBtfId });
  try {
    readIterator(progFd, (_, length) => length);
  } finally {
    close(progFd);
  }
}

function timed<T>(fn: () => T): [T, number] {
  const t0 = process.hrtime.bigint();
  const value = fn();
  return [value, Number(process.hrtime.bigint() - t0) / 1e6];
}

export async function benchOnePass(): Promise<string[]> {
  const out: string[] = [];
  const [, btfMs] = timed(kernelLayout);
  for (const layout of LAYOUTS) {
    out.push(
      `one pass: host + ${COUNT} namespaces of ${PER_NAMESPACE} UDP sockets, ${TARGETS} each connected to ${DST}; ${layout.short};`,
      `  medians of ${ROUNDS} rounds in turns, load ${loadavg()[0]!.toFixed(1)}`,
    );
    const scene = await withChildHash(layout.entries, () =>
      manyNamespaces("onep", COUNT, PER_NAMESPACE, TARGETS, BACKEND),
    );
    try {
      const expected = COUNT * TARGETS;
      const check = (what: string, found: number): void => {
        if (found !== expected) throw new Error(`${what} found ${found}, expected ${expected}`);
      };
      const [first, firstMs] = timed(() => findConnectedSockets({ backends: [BACKEND] }));
      check("the first pass", first.sockets.length);
      const walk = (): number =>
        ["", ...scene.names].reduce(
          (n, name) =>
            n +
            listSockets({ ...(name ? { netns: name } : {}), protocols: ["udp"], filter: `dst ${DST}` })
              .length,
          0,
        );
      const passes: number[] = [];
      const walks: number[] = [];
      const floors: number[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const [found, passMs] = timed(() => findConnectedSockets({ backends: [BACKEND] }));
        check("a pass", found.sockets.length);
        passes.push(passMs);
        const [listed, walkMs] = timed(walk);
        check("the sock_diag walk", listed);
        walks.push(walkMs);
        floors.push(timed(emptyPass)[1]);
      }
      const pass = median(passes);
      const sockDiag = median(walks);
      out.push(
        row("sock_diag walk, namespace after namespace", fmt.ms(sockDiag)),
        row("one pass", fmt.ms(pass), fmt.ratio(pass, sockDiag)),
        row(
          "the first pass (cookies asked through pidfd_getfd)",
          fmt.ms(firstMs),
          fmt.ratio(firstMs, sockDiag),
        ),
        row(
          "the kernel's walk alone (a program that returns)",
          fmt.ms(median(floors)),
          fmt.ratio(median(floors), sockDiag),
        ),
        "",
      );
      recordGoal(
        `one pass / sock_diag walk, host + ${COUNT} namespaces (${layout.short})`,
        pass / sockDiag,
        1,
      );
    } finally {
      await scene.stop();
    }
  }
  out.push(row("reading the kernel's BTF for the layout (once a process)", fmt.ms(btfMs)));
  return out;
}
