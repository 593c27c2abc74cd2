/**
 * compilePredicate: a filter tree to a JS function over InetSocket, run on every socket the kernel sends
 * (the kernel program may be absent or a superset). A call allocates nothing and formats nothing: it
 * compares the address words (srcWord, dstWord) with masks computed once here.
 *
 * Meaning — ss's, where ss's two evaluators agree. ss runs its bytecode in the kernel and then its
 * run_ssfilter in user space, and shows a socket only when both accept it. They disagree on:
 *   - address families: run_ssfilter compares raw address words whatever the families (so `src ::/0`
 *     would match IPv4 sockets, `src 0.0.0.0` the IPv6 `::`), the kernel checks them. Here, as in the
 *     kernel: an IPv4 prefix matches IPv4 sockets and IPv6 sockets holding a v4-mapped address
 *     (::ffff:a.b.c.d, compared on the last word); an IPv6 prefix matches IPv6 sockets only; a
 *     condition without address (`*`, `:PORT`) matches every family. This is exactly what `ss` shows for
 *     a condition that is not negated; under `not`, ss (which then shows what neither evaluator
 *     rejects) can hide sockets that match neither the condition nor its negation — here a socket always
 *     matches one of the two.
 *   - `autobound`: the kernel tests "port not bound by the program" (no SOCK_BINDPORT_LOCK, which
 *     sock_diag does not report), run_ssfilter "sport in ip_local_port_range". Here autobound means
 *     both (what `ss autobound` shows). The predicate can only test the range, so for `autobound` alone
 *     it over-approximates (and under `not` it accepts every socket); the kernel program, which always
 *     sends this condition unless told to omit it, decides exactly.
 * Absent attributes read as ss reads them: mark 0 (the kernel reports it only to CAP_NET_ADMIN),
 * cgroup id 0 (the kernel's value for time-wait and request sockets).
 */
import type { InetFamily, InetSocket } from "../diag/socket.js";
import type { FilterNode, HostCond, HostPrefix, PortCond, PortOp } from "./ast.js";
import { ephemeralPorts, type FilterEnv, resolveCgroup, resolveDevice } from "./env.js";
import { prefixWords } from "./prefix.js";

/** A compiled filter: true when the socket matches. */
export type SocketPredicate = (s: InetSocket) => boolean;

/** AddressMatch tests one end's family and address words. */
type AddressMatch = (family: InetFamily, w0: number, w1: number, w2: number, w3: number) => boolean;

const always: SocketPredicate = () => true;
const never: SocketPredicate = () => false;
const anyAddress: AddressMatch = () => true;

const PORT_TESTS: Record<PortOp, (value: number, port: number) => boolean> = {
  eq: (v, p) => v === p,
  ne: (v, p) => v !== p,
  lt: (v, p) => v < p,
  le: (v, p) => v <= p,
  gt: (v, p) => v > p,
  ge: (v, p) => v >= p,
};

/**
 * compilePredicate compiles a filter (undefined: match all) against `env` (interface names, cgroup
 * paths and the ephemeral port range are resolved now, once). Throws FilterResolveError for an unknown
 * `dev` or `cgroup`; the returned function never throws.
 */
export function compilePredicate(ast: FilterNode | undefined, env: FilterEnv = {}): SocketPredicate {
  return ast === undefined ? always : compile(ast, true, env);
}

function compile(node: FilterNode, positive: boolean, env: FilterEnv): SocketPredicate {
  switch (node.type) {
    case "and": {
      const a = compile(node.left, positive, env);
      const b = compile(node.right, positive, env);
      return (s) => a(s) && b(s);
    }
    case "or": {
      const a = compile(node.left, positive, env);
      const b = compile(node.right, positive, env);
      return (s) => a(s) || b(s);
    }
    case "not": {
      const a = compile(node.operand, !positive, env);
      return (s) => !a(s);
    }
    case "host":
      return hostPredicate(node);
    case "port":
      return portPredicate(node);
    case "dev": {
      const index = resolveDevice(node, env);
      return (s) => s.ifindex === index;
    }
    case "fwmark": {
      const mark = node.mark | 0;
      const mask = node.mask | 0;
      return (s) => ((s.mark ?? 0) & mask) === mark;
    }
    case "cgroup": {
      const id = resolveCgroup(node.path, env);
      return (s) => (s.cgroupId ?? 0n) === id;
    }
    case "autobound": {
      // Only the range half is visible here: an over-approximation, or (negated) an under-approximation.
      if (!positive) return never;
      const [lo, hi] = ephemeralPorts(env);
      return (s) => s.sport >= lo && s.sport <= hi;
    }
  }
}

function hostPredicate(node: HostCond): SocketPredicate {
  const port = node.port ?? -1;
  const match = node.prefix ? addressMatch(node.prefix) : anyAddress;
  if (node.side === "src")
    return (s) =>
      (port < 0 || s.sport === port) &&
      match(s.family, s.srcWord(0), s.srcWord(1), s.srcWord(2), s.srcWord(3));
  return (s) =>
    (port < 0 || s.dport === port) && match(s.family, s.dstWord(0), s.dstWord(1), s.dstWord(2), s.dstWord(3));
}

function portPredicate(node: PortCond): SocketPredicate {
  const test = PORT_TESTS[node.op];
  const port = node.port;
  return node.side === "src" ? (s) => test(s.sport, port) : (s) => test(s.dport, port);
}

/** addressMatch follows inet_diag_bc_run's S_COND/D_COND address test (net/ipv4/inet_diag.c). */
function addressMatch(prefix: HostPrefix): AddressMatch {
  const [c0, c1, c2, c3] = prefixWords(prefix);
  const len = prefix.prefixLength;
  const m0 = wordMask(len);
  const v0 = c0 & m0;
  if (prefix.family === "inet") {
    return (family, w0, w1, w2, w3) =>
      family === "inet" ? (w0 & m0) === v0 : w0 === 0 && w1 === 0 && w2 === 0xffff && (w3 & m0) === v0;
  }
  const m1 = wordMask(len - 32);
  const m2 = wordMask(len - 64);
  const m3 = wordMask(len - 96);
  const v1 = c1 & m1;
  const v2 = c2 & m2;
  const v3 = c3 & m3;
  return (family, w0, w1, w2, w3) =>
    family === "inet6" && (w0 & m0) === v0 && (w1 & m1) === v1 && (w2 & m2) === v2 && (w3 & m3) === v3;
}

/** wordMask is the int32 mask of the first `bits` bits of a word (clamped to 0..32). */
function wordMask(bits: number): number {
  if (bits <= 0) return 0;
  return bits >= 32 ? -1 : -1 << (32 - bits);
}
