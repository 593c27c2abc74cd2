/**
 * The operations of sockdiag/promises, by name: for each, the arguments and the result as the
 * synchronous library declares them (taken from its signatures, so a change there reaches here),
 * and for a stream the items and notes it sends. calls.ts implements exactly these maps; the
 * client's call() and open() are typed by them, so a name or an argument that does not fit is a
 * compile error on the caller's side, and a result arrives with its type.
 */
import type { deleteConntrack, iterateConntrack } from "../conntrack/index.js";
import type { Socket } from "../diag/socket.js";
import type { NamespaceFailure, NetNS, NetnsRef } from "../netns/index.js";
import type { destroySocket, destroySockets, iterateSockets, probe, SocketWatch } from "../sockets/index.js";
import type {
  BackendTerminator,
  NamespaceVerdict,
  terminateUDPConnectionsToBackend,
} from "../terminator/index.js";
import type { StreamItem } from "./wire.js";

/** A call: its arguments as the worker's library takes them, and what it returns. */
interface Op<A extends unknown[], R> {
  args: A;
  result: R;
}

/** The call of a synchronous function, as it is declared. */
type Sync<F> = F extends (...args: infer A) => infer R ? Op<A, R> : never;

type TerminatorConfigArg = ConstructorParameters<typeof BackendTerminator>[0];
type TerminatorCall<M extends "terminate" | "terminateMany" | "sharedPlan"> = Op<
  [config: TerminatorConfigArg, ...Parameters<BackendTerminator[M]>],
  ReturnType<BackendTerminator[M]>
>;

/** The calls: each returns one value (listSockets sends its sockets in chunks before it). */
export interface CallMap {
  listSockets: Op<Parameters<typeof iterateSockets>, { failures: NamespaceFailure[] }>;
  destroySockets: Sync<typeof destroySockets>;
  destroySocket: Sync<typeof destroySocket>;
  terminate: TerminatorCall<"terminate">;
  terminateMany: TerminatorCall<"terminateMany">;
  /** The namespaces of a termination, listed and judged once by the one pass, for workers to share. */
  sharedPlan: TerminatorCall<"sharedPlan">;
  /**
   * terminateMany over a share of those refs; with `verdicts` (index-aligned with `refs`), as the
   * one pass's plan judged them.
   */
  terminateManyAt: Op<
    [
      config: TerminatorConfigArg,
      backends: Parameters<BackendTerminator["terminateMany"]>[0],
      refs: readonly (NetnsRef | undefined)[],
      options: Parameters<BackendTerminator["terminateMany"]>[1],
      verdicts?: readonly (NamespaceVerdict | undefined)[],
    ],
    ReturnType<BackendTerminator["terminateMany"]>
  >;
  terminateUDPConnectionsToBackend: Sync<typeof terminateUDPConnectionsToBackend>;
  probe: Sync<typeof probe>;
  deleteConntrack: Sync<typeof deleteConntrack>;
}

/** A stream: its arguments, the items it sends, and the notes it meets (never: none). */
interface StreamOp<A extends unknown[], Item extends StreamItem, Note = never> {
  args: A;
  item: Item;
  note: Note;
}

type ItemOf<I> = I extends Iterable<infer T> ? T : never;
type NoteOf<I> = I extends { notes: readonly (infer N)[] } ? N : never;
type Sockets = ReturnType<typeof iterateSockets>;
type Conntrack = ReturnType<typeof iterateConntrack>;

/** The streams: pulled chunk by chunk by the caller. */
export interface StreamMap {
  iterateSockets: StreamOp<Parameters<typeof iterateSockets>, ItemOf<Sockets>, NoteOf<Sockets>>;
  iterateConntrack: StreamOp<Parameters<typeof iterateConntrack>, ItemOf<Conntrack>, NoteOf<Conntrack>>;
  watchSockets: StreamOp<
    ConstructorParameters<typeof SocketWatch>,
    ReturnType<SocketWatch["poll"]>[number],
    NoteOf<SocketWatch>
  >;
}

export type CallName = keyof CallMap;
export type StreamName = keyof StreamMap;

/**
 * An argument as the caller's thread sends it: without `signal` (it stays with the caller, who
 * sends an abort flag instead), its callbacks free to answer with a Promise (the worker's stand-in
 * waits for the answer). Sockets, handles and arrays go as they are (pack.ts carries them).
 */
type Sent<T> = T extends Socket | NetNS | readonly unknown[]
  ? T
  : T extends object
    ? { [K in keyof T as K extends "signal" ? never : K]: MaybeAsync<T[K]> }
    : T;
type MaybeAsync<F> = F extends (...args: infer A) => infer R ? (...args: A) => R | Promise<R> : F;

/** The arguments of `A` as the caller sends them (see Sent). */
export type SentArgs<A extends unknown[]> = { [I in keyof A]: Sent<A[I]> };
