/**
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
 * predicate.ts for that meaning). A condition the caller leaves out (`omit`, e.g. "fwmark" without
 * CAP_NET_ADMIN, for which the kernel refuses the whole program with EPERM) is replaced by "true" where
 * it is not negated and "false" where it is, so the program then accepts a SUPERSET, and the JS
 * predicate must decide. A filter that reduces to "true" yields no program (undefined), as does one too
 * long for the u16 jump offsets. Ports and the mark are host order (little-endian here), addresses
 * network order.
 */
import {
  AF_INET,
  AF_INET6,
  INET_DIAG_BC_AUTO,
  INET_DIAG_BC_CGROUP_COND,
  INET_DIAG_BC_D_COND,
  INET_DIAG_BC_D_GE,
  INET_DIAG_BC_D_LE,
  INET_DIAG_BC_DEV_COND,
  INET_DIAG_BC_JMP,
  INET_DIAG_BC_MARK_COND,
  INET_DIAG_BC_S_COND,
  INET_DIAG_BC_S_GE,
  INET_DIAG_BC_S_LE,
} from "../diag/constants.js";
import type { FilterLeaf, FilterNode, HostCond, PortCond } from "./ast.js";
import { ephemeralPorts, type FilterEnv, resolveCgroup, resolveDevice } from "./env.js";
import { prefixWords } from "./prefix.js";

/** A condition type that can be left to user space. */
export type OmittableCondition = "dev" | "fwmark" | "cgroup" | "autobound";

/** Options of compileBytecode. */
export interface BytecodeOptions {
  /** Resolvers for `dev`, `cgroup` and `autobound` (see FilterEnv); defaults answer for this namespace. */
  env?: FilterEnv;
  /** Conditions not to send (the program then accepts a superset). */
  omit?: readonly OmittableCondition[];
}

/** The largest program whose jumps (u16 `no`, up to length + 4) and nlattr length still fit. */
const MAX_PROGRAM = 65528;

/**
 * compileBytecode compiles a filter for INET_DIAG_REQ_BYTECODE. Returns undefined when the kernel need
 * not filter (no filter, or nothing left to send). Throws FilterResolveError for an unknown `dev` or
 * `cgroup`. Whether the program needs CAP_NET_ADMIN: {@link programUsesMark}.
 */
export function compileBytecode(
  ast: FilterNode | undefined,
  options: BytecodeOptions = {},
): Buffer | undefined {
  if (ast === undefined) return undefined;
  const omit = new Set(options.omit ?? []);
  const expr = lower(ast, true, { env: options.env ?? {}, omit });
  if (expr === true) return undefined;
  return serialise(expr === false ? [jump("reject")] : emit(expr));
}

/** programUsesMark tells whether a program holds a MARK_COND op (refused with EPERM without CAP_NET_ADMIN). */
export function programUsesMark(program: Buffer): boolean {
  for (let o = 0; o + 4 <= program.length; ) {
    if (program[o] === INET_DIAG_BC_MARK_COND) return true;
    const yes = program[o + 1]!;
    if (yes === 0) return false;
    o += yes;
  }
  return false;
}

// ---- lowering: tree -> ops tree, with omitted conditions folded to constants ----

type Target = "accept" | "reject" | Instr;

/** One inet_diag_bc_op and the bytes that follow it; `yes` is always its own size. */
interface Instr {
  code: number;
  payload: Buffer;
  no: Target;
}

/** An ops tree; booleans only stand for whole subtrees, never below an operator. */
type Expr = boolean | Ops;
type Ops = Instr | { op: "and" | "or"; left: Ops; right: Ops } | { op: "not"; operand: Ops };

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
      return op(INET_DIAG_BC_DEV_COND, u32(resolveDevice(node, ctx.env)));
    case "fwmark":
      return op(INET_DIAG_BC_MARK_COND, Buffer.concat([u32(node.mark), u32(node.mask)]));
    case "cgroup": {
      const id = Buffer.alloc(8);
      id.writeBigUInt64LE(resolveCgroup(node.path, ctx.env));
      return op(INET_DIAG_BC_CGROUP_COND, id);
    }
    case "autobound": {
      const [lo, hi] = ephemeralPorts(ctx.env);
      const range = binary("and", portOp(INET_DIAG_BC_S_GE, lo), portOp(INET_DIAG_BC_S_LE, hi));
      return binary("and", op(INET_DIAG_BC_AUTO, Buffer.alloc(0)), range);
    }
  }
}

/** hostcond builds S_COND/D_COND + struct inet_diag_hostcond { u8 family, prefix_len; int port; be32 addr[] }. */
function hostcond(node: HostCond): Instr {
  const p = node.prefix;
  const words = p ? prefixWords(p) : [0, 0, 0, 0];
  const inet6 = p?.family === "inet6";
  const b = Buffer.alloc(8 + (inet6 ? 16 : 4));
  b[0] = p ? (inet6 ? AF_INET6 : AF_INET) : 0;
  b[1] = p ? p.prefixLength : 0;
  b.writeInt32LE(node.port ?? -1, 4);
  for (let i = 0; i < (inet6 ? 4 : 1); i++) b.writeUInt32BE(words[i]!, 8 + 4 * i);
  return op(node.side === "src" ? INET_DIAG_BC_S_COND : INET_DIAG_BC_D_COND, b);
}

function portcond(node: PortCond): Expr {
  const src = node.side === "src";
  const ge = () => portOp(src ? INET_DIAG_BC_S_GE : INET_DIAG_BC_D_GE, node.port);
  const le = () => portOp(src ? INET_DIAG_BC_S_LE : INET_DIAG_BC_D_LE, node.port);
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

/** portOp builds a port comparison: the port rides in the `no` field of a second op. */
function portOp(code: number, port: number): Instr {
  const b = Buffer.alloc(4);
  b.writeUInt16LE(port, 2);
  return op(code, b);
}

function op(code: number, payload: Buffer): Instr {
  return { code, payload, no: "reject" };
}

function jump(no: Target): Instr {
  return { code: INET_DIAG_BC_JMP, payload: Buffer.alloc(0), no };
}

function u32(value: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(value >>> 0);
  return b;
}

// ---- emission: ops tree -> flat instruction list with symbolic jump targets ----

function emit(expr: Ops): Instr[] {
  if (!("op" in expr)) return [expr];
  if (expr.op === "not") {
    const a = emit(expr.operand);
    const j = jump("reject");
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
  const j = jump("accept");
  retarget(a, "reject", b[0]!);
  retarget(a, "accept", j);
  return [...a, j, ...b];
}

function retarget(fragment: Instr[], from: "accept" | "reject", to: Target): void {
  for (const instr of fragment) if (instr.no === from) instr.no = to;
}

/** serialise lays the ops out and resolves jumps; undefined when the program is over MAX_PROGRAM. */
function serialise(instrs: Instr[]): Buffer | undefined {
  const offsets = new Map<Instr, number>();
  let length = 0;
  for (const instr of instrs) {
    offsets.set(instr, length);
    length += 4 + instr.payload.length;
  }
  if (length > MAX_PROGRAM) return undefined;
  const out = Buffer.alloc(length);
  for (const instr of instrs) {
    const at = offsets.get(instr)!;
    const to = instr.no === "accept" ? length : instr.no === "reject" ? length + 4 : offsets.get(instr.no)!;
    out[at] = instr.code;
    out[at + 1] = 4 + instr.payload.length;
    out.writeUInt16LE(to - at, at + 2);
    instr.payload.copy(out, at + 4);
  }
  return out;
}
