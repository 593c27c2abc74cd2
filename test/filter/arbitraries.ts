/**
 * fast-check generators for filter tests: trees of every node type (with canonical addresses, so a
 * round trip through text can deep-equal them) and sockets whose addresses and ports are drawn mostly
 * from the same small pools, so random conditions match random sockets often enough to mean something.
 */
import fc from "fast-check";
import { formatIPv4, formatIPv6 } from "../../src/diag/address.js";
import type { FilterLeaf, FilterNode, HostCond, HostPrefix, PortOp } from "../../src/filter/index.js";
import { socketFromWords } from "../kit/socket-words.js";
import type { ReferenceEnv, ReferenceSocket } from "./reference.js";

const V4_POOL = [0x0a000001, 0x0a000002, 0x0a010203, 0x7f000001, 0, 0xc0a80001];
const V6_POOL: ReadonlyArray<readonly [number, number, number, number]> = [
  [0, 0, 0, 0],
  [0, 0, 0, 1],
  [0, 0, 0xffff, 0x0a000001],
  [0, 0, 0xffff, 0x7f000001],
  [0x20010db8, 0, 0, 1],
  [0x0a000000, 0, 0, 1], // first word inside 10.0.0.0/8: must not match IPv4 conditions
  [0xfe800000, 0, 0, 1],
];
const PORT_POOL = [0, 22, 53, 80, 1023, 1024, 32767, 32768, 40000, 60999, 61000, 65535];
const MARK_POOL = [0, 1, 0x10, 0xff, 0xff10, 0xffffffff];
const OPS: PortOp[] = ["eq", "ne", "lt", "le", "gt", "ge"];

/** The names every generated `dev`/`cgroup` for compiled tests resolves to. */
export const TEST_ENV: ReferenceEnv = {
  devices: new Map([
    ["lo", 1],
    ["eth0", 2],
  ]),
  cgroups: new Map([
    ["/", 1n],
    ["/a", 42n],
    ["/b/c", 7n],
  ]),
  ephemeral: [32768, 60999],
};

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const v4Word = fc.oneof(fc.constantFrom(...V4_POOL), u32);
const v6Words = fc.oneof(fc.constantFrom(...V6_POOL), fc.tuple(u32, u32, u32, u32));
const port = fc.oneof(fc.constantFrom(...PORT_POOL), fc.integer({ min: 0, max: 65535 }));
const side = fc.constantFrom("src" as const, "dst" as const);

const prefix: fc.Arbitrary<HostPrefix> = fc.oneof(
  fc
    .record({ w: v4Word, len: fc.integer({ min: 0, max: 32 }) })
    .map(({ w, len }): HostPrefix => ({ family: "inet", address: formatIPv4(w), prefixLength: len })),
  fc.record({ w: v6Words, len: fc.integer({ min: 0, max: 128 }) }).map(
    ({ w, len }): HostPrefix => ({
      family: "inet6",
      address: formatIPv6(w[0], w[1], w[2], w[3]),
      prefixLength: len,
    }),
  ),
);

const host: fc.Arbitrary<HostCond> = fc
  .record({ side, prefix: fc.option(prefix, { nil: undefined }), port: fc.option(port, { nil: undefined }) })
  .map(({ side, prefix, port }) => {
    const node: HostCond = { type: "host", side };
    if (prefix) node.prefix = prefix;
    if (port !== undefined) node.port = port;
    return node;
  });

/** Names for round trips: anything non-empty, including what must be escaped. */
const anyName = fc
  .string({ minLength: 1, maxLength: 10, unit: fc.constantFrom(..."aZ0/-.#()!&|<>=\\ \t".split("")) })
  .chain((s) => fc.constantFrom(s, "and", "src", "not", "eq", "autobound"));

function leaves(names: {
  dev: fc.Arbitrary<string>;
  cgroup: fc.Arbitrary<string>;
}): fc.Arbitrary<FilterLeaf> {
  return fc.oneof(
    host,
    fc.record({ side, op: fc.constantFrom(...OPS), port }).map((r): FilterLeaf => ({ type: "port", ...r })),
    names.dev.map((device): FilterLeaf => ({ type: "dev", device })),
    fc
      .record({
        mark: fc.oneof(fc.constantFrom(...MARK_POOL), u32),
        mask: fc.oneof(fc.constantFrom(...MARK_POOL), u32),
      })
      .map((r): FilterLeaf => ({ type: "fwmark", ...r })),
    names.cgroup.map((path): FilterLeaf => ({ type: "cgroup", path })),
    fc.constant<FilterLeaf>({ type: "autobound" }),
  );
}

function trees(leaf: fc.Arbitrary<FilterLeaf>): fc.Arbitrary<FilterNode> {
  const { tree } = fc.letrec<{ tree: FilterNode }>((tie) => ({
    tree: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      leaf,
      // Spread: fc.record may build null-prototype objects, which deepStrictEqual tells apart.
      fc
        .record({
          type: fc.constantFrom("and" as const, "or" as const),
          left: tie("tree"),
          right: tie("tree"),
        })
        .map((n) => ({ ...n })),
      fc.record({ type: fc.constant("not" as const), operand: tie("tree") }).map((n) => ({ ...n })),
    ),
  }));
  return tree;
}

/** Trees whose names resolve in TEST_ENV (for compiling). */
export const compilableTree = trees(
  leaves({
    dev: fc.constantFrom("lo", "eth0", "1", "2", "7"),
    cgroup: fc.constantFrom(...TEST_ENV.cgroups.keys()),
  }),
);

/** Trees with arbitrary names (for text round trips). */
export const anyTree = trees(leaves({ dev: anyName, cgroup: anyName }));

/** Sockets (with the kernel-only port lock bit) drawn from the pools above. */
export const referenceSocket: fc.Arbitrary<ReferenceSocket> = fc
  .record({
    inet6: fc.boolean(),
    src4: v4Word,
    dst4: v4Word,
    src6: v6Words,
    dst6: v6Words,
    sport: port,
    dport: port,
    ifindex: fc.constantFrom(0, 1, 2, 7),
    mark: fc.oneof(fc.constantFrom(...MARK_POOL), u32),
    cgroupId: fc.constantFrom(0n, 1n, 7n, 42n),
    portLocked: fc.boolean(),
  })
  .map((r) => {
    const s = socketFromWords({
      family: r.inet6 ? "inet6" : "inet",
      protocol: "tcp",
      srcWords: r.inet6 ? r.src6 : [r.src4, 0, 0, 0],
      dstWords: r.inet6 ? r.dst6 : [r.dst4, 0, 0, 0],
      sport: r.sport,
      dport: r.dport,
      ifindex: r.ifindex,
      cookie: 0n,
    });
    s.mark = r.mark;
    s.cgroupId = r.cgroupId;
    return { socket: s, portLocked: r.portLocked };
  });

/** The FilterEnv matching TEST_ENV. */
export const testFilterEnv = {
  resolveDevice: (name: string) => TEST_ENV.devices.get(name),
  resolveCgroup: (path: string) => TEST_ENV.cgroups.get(path),
  ephemeralPorts: TEST_ENV.ephemeral,
};

/** hasAutobound tells whether a tree holds `autobound` anywhere. */
export function hasAutobound(node: FilterNode): boolean {
  switch (node.type) {
    case "and":
    case "or":
      return hasAutobound(node.left) || hasAutobound(node.right);
    case "not":
      return hasAutobound(node.operand);
    default:
      return node.type === "autobound";
  }
}
