/**
 * Test-only reference meaning of a filter, written plainly (addresses as 128-bit bigints, no masks
 * precomputed) from the rules documented in src/filter/compile.ts (compilePredicate), so the optimised predicate and the
 * compiled bytecode can both be checked against it. It also sees what sock_diag does not report:
 * whether the socket's port was bound by the program (SOCK_BINDPORT_LOCK).
 */
import type { InetSocket } from "../../src/diag/socket.js";
import type { FilterNode, HostPrefix } from "../../src/filter/index.js";

/** What the reference resolves names with. */
export interface ReferenceEnv {
  devices: ReadonlyMap<string, number>;
  cgroups: ReadonlyMap<string, bigint>;
  ephemeral: readonly [number, number];
}

/** A socket plus the kernel-only fact the reference needs. */
export interface ReferenceSocket {
  socket: InetSocket;
  portLocked: boolean;
}

/** referenceMatch is the meaning of `node` for one socket. */
export function referenceMatch(node: FilterNode, r: ReferenceSocket, env: ReferenceEnv): boolean {
  const s = r.socket;
  switch (node.type) {
    case "and":
      return referenceMatch(node.left, r, env) && referenceMatch(node.right, r, env);
    case "or":
      return referenceMatch(node.left, r, env) || referenceMatch(node.right, r, env);
    case "not":
      return !referenceMatch(node.operand, r, env);
    case "host": {
      const port = node.side === "src" ? s.sport : s.dport;
      if (node.port !== undefined && node.port !== port) return false;
      if (!node.prefix) return true;
      const words =
        node.side === "src"
          ? [s.srcWords[0], s.srcWords[1], s.srcWords[2], s.srcWords[3]]
          : [s.dstWords[0], s.dstWords[1], s.dstWords[2], s.dstWords[3]];
      return addressMatches(s.family, words, node.prefix);
    }
    case "port": {
      const v = node.side === "src" ? s.sport : s.dport;
      const p = node.port;
      return { eq: v === p, ne: v !== p, lt: v < p, le: v <= p, gt: v > p, ge: v >= p }[node.op];
    }
    case "dev": {
      const index = env.devices.get(node.device) ?? Number(node.device);
      return s.ifindex === index;
    }
    case "fwmark":
      return ((s.mark ?? 0) & node.mask) >>> 0 === node.mark;
    case "cgroup":
      return (s.cgroupId ?? 0n) === env.cgroups.get(node.path);
    case "autobound":
      return !r.portLocked && s.sport >= env.ephemeral[0] && s.sport <= env.ephemeral[1];
  }
}

function addressMatches(family: "inet" | "inet6", words: number[], prefix: HostPrefix): boolean {
  const want = addressBits(prefix.family, prefix.address);
  if (prefix.family === "inet6")
    return (
      family === "inet6" &&
      topBits(toBig(words), 128, prefix.prefixLength) === topBits(want, 128, prefix.prefixLength)
    );
  if (family === "inet")
    return (
      topBits(BigInt(words[0]! >>> 0), 32, prefix.prefixLength) === topBits(want, 32, prefix.prefixLength)
    );
  const all = toBig(words);
  const mapped = all >> 32n === 0xffffn;
  return (
    mapped && topBits(all & 0xffffffffn, 32, prefix.prefixLength) === topBits(want, 32, prefix.prefixLength)
  );
}

function toBig(words: number[]): bigint {
  return words.reduce((acc, w) => (acc << 32n) | BigInt(w >>> 0), 0n);
}

function topBits(value: bigint, width: number, bits: number): bigint {
  return value >> BigInt(width - bits);
}

/** addressBits reads canonical address text (as formatIPv4/formatIPv6 write it) independently of src/filter. */
function addressBits(family: "inet" | "inet6", text: string): bigint {
  if (family === "inet") return text.split(".").reduce((acc, p) => (acc << 8n) | BigInt(p), 0n);
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/.exec(text);
  if (mapped) return (0xffffn << 32n) | addressBits("inet", mapped[1]!);
  const [head, rest] = text.split("::") as [string, string | undefined];
  const h = head ? head.split(":") : [];
  const r = rest ? rest.split(":") : [];
  const groups =
    rest === undefined ? h : [...h, ...new Array<string>(8 - h.length - r.length).fill("0"), ...r];
  return groups.reduce((acc, g) => (acc << 16n) | BigInt(`0x${g}`), 0n);
}
