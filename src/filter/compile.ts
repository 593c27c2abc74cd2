/**
 * Filter compilation: a checked filter tree to the two forms that run it — the kernel's
 * INET_DIAG_REQ_BYTECODE program (compileBytecode) and a JS predicate over InetSocket
 * (compilePredicate) with the same meaning — and compileIn, which compiles both inside the
 * namespace whose sockets they filter: `dev` names, cgroup paths and the ephemeral port range are
 * that namespace's. The predicate always runs, so results never depend on whether the kernel
 * filtered.
 */
import {
  AF_INET,
  AF_INET6,
  INET_DIAG_BC_D_GE,
  INET_DIAG_BC_D_LE,
  INET_DIAG_BC_S_GE,
  INET_DIAG_BC_S_LE,
} from "../diag/constants.js";
import { type BytecodeOp, bytecode, layOutBytecode } from "../diag/inet.js";
import type { InetFamily, InetSocket } from "../diag/socket.js";
import { type NetNS, runIn } from "../netns/index.js";
import { CAP_NET_ADMIN, hasCapability } from "../sys/capabilities.js";
import type { FilterLeaf, FilterNode, HostCond, HostPrefix, PortCond, PortOp } from "./ast.js";
import type { PreparedFilter } from "./check.js";
import { ephemeralPorts, type FilterEnv, resolveCgroup, resolveDevice } from "./env.js";
import { type AddressWords, prefixWords } from "./prefix.js";

/** A filter compiled for one namespace. */
export interface CompiledFilter {
  /** The kernel program, when the expression can be expressed (exactly or as a superset). */
  bytecode: Buffer | undefined;
  predicate: ((s: InetSocket) => boolean) | undefined;
}

/**
 * What the bytecode must leave to the predicate for this caller: MARK_COND is refused with EPERM
 * without CAP_NET_ADMIN — whatever the user id: root in a container often lacks it — and the
 * predicate checks the mark anyway. Asked at each compile of a filter that tests the mark, so a
 * process that changes its privileges is judged as it is now.
 */
function omittedConditions(filter: PreparedFilter): readonly "fwmark"[] {
  return filter.testsMark && !hasCapability(CAP_NET_ADMIN) ? ["fwmark"] : [];
}

/**
 * The compiled form of each filter that compiles the same everywhere (not perNamespace), made at its
 * first compileIn: a walk over many namespaces compiles it once, not once per namespace.
 */
const compiledOnce = new WeakMap<PreparedFilter, Readonly<CompiledFilter>>();

/**
 * Compile a prepared filter for sockets of `netns` (undefined: the caller's own), inside it: `dev`
 * names, cgroup paths and the ephemeral port range are that namespace's. A filter of addresses and
 * ports alone depends on none of them: its first compile serves every namespace (the caller must
 * not change what it returns). Throws FilterResolveError for an unknown device or cgroup.
 */
export function compileIn(filter: PreparedFilter, netns: NetNS | undefined): Readonly<CompiledFilter> {
  const tree = filter.tree;
  if (!tree) return { bytecode: undefined, predicate: undefined };
  const compile = () => ({
    bytecode: filter.kernel ? compileBytecode(tree, { omit: omittedConditions(filter) }) : undefined,
    predicate: compilePredicate(tree),
  });
  if (!filter.perNamespace) {
    let compiled = compiledOnce.get(filter);
    if (!compiled) {
      compiled = compile();
      compiledOnce.set(filter, compiled);
    }
    return compiled;
  }
  return netns ? runIn(netns, compile) : compile();
}

// ---- the kernel program ----

/*
 * compileBytecode: a filter tree to an INET_DIAG_REQ_BYTECODE program (struct inet_diag_bc_op[]) that the
 * kernel runs per socket (net/ipv4/inet_diag.c inet_diag_bc_run) before sending it to us.
 *
 * Encoding, as ss's ssfilter_bytecompile (misc/ss.c) so the bytes equal what `ss` sends:
 *   - every op's `yes` is its own size (fall through); `no` jumps to a later op, to the end (accept) or
 *     to end+4 (reject); `src`/`dst`/`sport =` become S_COND/D_COND with an inet_diag_hostcond,
 *     `>=`/`<=` S_GE/S_LE (D_*), `>` NOT(LE), `<` NOT(GE), `!=` NOT(COND);
 *   - a AND b = a, b (a's "accept" jumps re-aimed at b); a OR b = a, JMP(to end), b (a's "reject"
 *     jumps re-aimed at b); NOT a = a, JMP(to reject) (a's "reject" jumps become "accept").
 * Unlike ss, `dev` is sent too (DEV_COND compares sk_bound_dev_if, the same value as idiag_if), and
 * `autobound` is sent as AUTO AND sport in the ephemeral range: exactly the sockets `ss autobound` shows.
 *
 * Exactness: with every condition sent, the program accepts exactly the sockets the filter means (see
 * compilePredicate below for that meaning). A condition the caller leaves out (`omit`, e.g. "fwmark" without
 * CAP_NET_ADMIN, for which the kernel refuses the whole program with EPERM) is replaced by "true" where
 * it is not negated and "false" where it is, so the program then accepts a SUPERSET, and the JS
 * predicate must decide. A filter that reduces to "true" yields no program (undefined), as does one too
 * long for the u16 jump offsets. Ports and the mark are host order (little-endian here), addresses
 * network order.
 */

/** A condition type that can be left to user space. */
export type OmittableCondition = "dev" | "fwmark" | "cgroup" | "autobound";

/** Options of compileBytecode. */
export interface BytecodeOptions {
  /** Resolvers for `dev`, `cgroup` and `autobound` (see FilterEnv); defaults answer for this namespace. */
  env?: FilterEnv;
  /** Conditions not to send (the program then accepts a superset). */
  omit?: readonly OmittableCondition[];
}

/**
 * compileBytecode compiles a filter for INET_DIAG_REQ_BYTECODE. Returns undefined when the kernel need
 * not filter (no filter, or nothing left to send). Throws FilterResolveError for an unknown `dev` or
 * `cgroup`. A program with MARK_COND needs CAP_NET_ADMIN: omit "fwmark" without it.
 */
export function compileBytecode(
  ast: FilterNode | undefined,
  options: BytecodeOptions = {},
): Buffer | undefined {
  if (ast === undefined) return undefined;
  const omit = new Set(options.omit ?? []);
  const expr = lower(ast, true, { env: options.env ?? {}, omit });
  if (expr === true) return undefined;
  return layOutBytecode(expr === false ? [bytecode.jump("reject")] : emit(expr));
}

// ---- lowering: tree -> ops tree, with omitted conditions folded to constants ----

/** An ops tree; booleans only stand for whole subtrees, never below an operator. */
type Expr = boolean | Ops;
type Ops = BytecodeOp | { op: "and" | "or"; left: Ops; right: Ops } | { op: "not"; operand: Ops };

interface Lowering {
  env: FilterEnv;
  omit: ReadonlySet<string>;
}

function lower(node: FilterNode, positive: boolean, ctx: Lowering): Expr {
  switch (node.type) {
    case "and":
    case "or":
      return binary(node.type, lower(node.left, positive, ctx), lower(node.right, positive, ctx));
    case "not":
      return negate(lower(node.operand, !positive, ctx));
    default:
      // An omitted condition may only widen the program: "true" unless negated an odd number of times.
      return ctx.omit.has(node.type) ? positive : leaf(node, ctx);
  }
}

function binary(op: "and" | "or", left: Expr, right: Expr): Expr {
  // "true" absorbs an OR and is neutral in an AND; "false" the other way round.
  if (typeof left === "boolean") return left === (op === "or") ? left : right;
  if (typeof right === "boolean") return right === (op === "or") ? right : left;
  return { op, left, right };
}

function negate(operand: Expr): Expr {
  return typeof operand === "boolean" ? !operand : { op: "not", operand };
}

function leaf(node: FilterLeaf, ctx: Lowering): Expr {
  switch (node.type) {
    case "host":
      return hostcond(node);
    case "port":
      return portcond(node);
    case "dev":
      return bytecode.dev(resolveDevice(node, ctx.env));
    case "fwmark":
      return bytecode.mark(node.mark, node.mask);
    case "cgroup":
      return bytecode.cgroup(resolveCgroup(node.path, ctx.env));
    case "autobound": {
      const [lo, hi] = ephemeralPorts(ctx.env);
      const range = binary("and", bytecode.port(INET_DIAG_BC_S_GE, lo), bytecode.port(INET_DIAG_BC_S_LE, hi));
      return binary("and", bytecode.autobound(), range);
    }
  }
}

function hostcond(node: HostCond): BytecodeOp {
  const p = node.prefix;
  if (!p) return bytecode.host(node.side, 0, 0, node.port ?? -1, []);
  const family = p.family === "inet6" ? AF_INET6 : AF_INET;
  return bytecode.host(node.side, family, p.prefixLength, node.port ?? -1, prefixWords(p));
}

function portcond(node: PortCond): Expr {
  const src = node.side === "src";
  const ge = () => bytecode.port(src ? INET_DIAG_BC_S_GE : INET_DIAG_BC_D_GE, node.port);
  const le = () => bytecode.port(src ? INET_DIAG_BC_S_LE : INET_DIAG_BC_D_LE, node.port);
  switch (node.op) {
    case "eq":
      return hostcond({ type: "host", side: node.side, port: node.port });
    case "ne":
      return negate(hostcond({ type: "host", side: node.side, port: node.port }));
    case "ge":
      return ge();
    case "le":
      return le();
    case "gt":
      return negate(le());
    case "lt":
      return negate(ge());
  }
}

// ---- emission: ops tree -> flat instruction list with symbolic jump targets ----

function emit(expr: Ops): BytecodeOp[] {
  if (!("op" in expr)) return [expr];
  if (expr.op === "not") {
    const a = emit(expr.operand);
    const j = bytecode.jump("reject");
    retarget(a, "accept", j);
    retarget(a, "reject", "accept");
    return [...a, j];
  }
  const a = emit(expr.left);
  const b = emit(expr.right);
  if (expr.op === "and") {
    retarget(a, "accept", b[0]!);
    return [...a, ...b];
  }
  const j = bytecode.jump("accept");
  retarget(a, "reject", b[0]!);
  retarget(a, "accept", j);
  return [...a, j, ...b];
}

function retarget(fragment: BytecodeOp[], from: "accept" | "reject", to: BytecodeOp["no"]): void {
  for (const instr of fragment) if (instr.no === from) instr.no = to;
}

// ---- the JS predicate ----

/*
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

/** A compiled filter: true when the socket matches. */
export type SocketPredicate = (s: InetSocket) => boolean;

/** AddressMatch tests one end's family and address words. */
type AddressMatch = (family: InetFamily, words: Readonly<AddressWords>) => boolean;

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
  return ast === undefined ? always : predicateOf(ast, true, env);
}

function predicateOf(node: FilterNode, positive: boolean, env: FilterEnv): SocketPredicate {
  switch (node.type) {
    case "and": {
      const a = predicateOf(node.left, positive, env);
      const b = predicateOf(node.right, positive, env);
      return (s) => a(s) && b(s);
    }
    case "or": {
      const a = predicateOf(node.left, positive, env);
      const b = predicateOf(node.right, positive, env);
      return (s) => a(s) || b(s);
    }
    case "not": {
      const a = predicateOf(node.operand, !positive, env);
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
  if (node.side === "src") return (s) => (port < 0 || s.sport === port) && match(s.family, s.srcWords);
  return (s) => (port < 0 || s.dport === port) && match(s.family, s.dstWords);
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
    return (family, w) =>
      family === "inet"
        ? (w[0] & m0) === v0
        : w[0] === 0 && w[1] === 0 && w[2] === 0xffff && (w[3] & m0) === v0;
  }
  const m1 = wordMask(len - 32);
  const m2 = wordMask(len - 64);
  const m3 = wordMask(len - 96);
  const v1 = c1 & m1;
  const v2 = c2 & m2;
  const v3 = c3 & m3;
  return (family, w) =>
    family === "inet6" &&
    (w[0] & m0) === v0 &&
    (w[1] & m1) === v1 &&
    (w[2] & m2) === v2 &&
    (w[3] & m3) === v3;
}

/** wordMask is the int32 mask of the first `bits` bits of a word (clamped to 0..32). */
function wordMask(bits: number): number {
  if (bits <= 0) return 0;
  return bits >= 32 ? -1 : -1 << (32 - bits);
}
