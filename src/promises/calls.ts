/**
 * What the worker can run: each entry is one line over the synchronous library, in the worker's
 * thread (where its namespace moves happen). `calls` return a value (sockets they emit stream back
 * in chunks first); `streams` return an iterable the caller pulls chunk by chunk. Both implement
 * exactly the maps of ops.ts: a new call of sockdiag/promises is one entry there, one here and one
 * line in promises/index.ts.
 */
import { deleteConntrack, iterateConntrack } from "../conntrack/index.js";
import type { InetSocket, Socket } from "../diag/socket.js";
import { type NamespaceFailure, targetsOfRefs } from "../netns/index.js";
import { isOptionsObject } from "../options/index.js";
import {
  destroySocket,
  destroySockets,
  type InetMessageSink,
  iterateSockets,
  probe,
  SocketWatch,
} from "../sockets/index.js";
import type { AbortSignalLike } from "../sys/errors.js";
import { BackendTerminator, GivenVerdicts, terminateUDPConnectionsToBackend } from "../terminator/index.js";
import type { CallMap, CallName, StreamMap, StreamName } from "./ops.js";

/** What a call gets besides its arguments. */
export interface CallContext {
  /** Aborted when the caller's AbortSignal is. */
  signal: AbortSignalLike;
  /** Send a socket of the result: it goes out with the next chunk. */
  emit(s: Socket): void;
  /** Send an inet socket of the result as the kernel's message (see SocketIteration#forEachMessage). */
  emitInetMessage: InetMessageSink;
}

/** A call of the map, in the worker: its arguments as the library takes them, its result. */
type Calls = { [K in CallName]: (args: CallMap[K]["args"], ctx: CallContext) => CallMap[K]["result"] };

/**
 * A stream: its items pulled by chunks, with the namespace failures and notes met so far. `null`
 * means "none yet": the worker sends what it has and asks again a little later, serving other
 * calls meanwhile.
 */
type Streams = {
  [K in StreamName]: (
    args: StreamMap[K]["args"],
    // Its items go out as the caller pulls them, not through emit.
    ctx: Pick<CallContext, "signal">,
  ) => Iterable<StreamMap[K]["item"] | null> & {
    failures?: NamespaceFailure[];
    notes?: StreamMap[K]["note"][];
  };
};

export const calls: Calls = {
  listSockets: ([query], ctx) => emitAll(iterateSockets(query), ctx),
  destroySockets: ([query], ctx) => destroySockets(withSignal(query, ctx)),
  destroySocket: ([socket, options], ctx) => destroySocket(socket, withSignal(options, ctx)),
  terminate: ([config, backend, options], ctx) =>
    new BackendTerminator(config).terminate(backend, withSignal(options, ctx)),
  terminateMany: ([config, backends, options], ctx) =>
    new BackendTerminator(config).terminateMany(backends, withSignal(options, ctx)),
  sharedPlan: ([config, backends]) => new BackendTerminator(config).sharedPlan(backends),
  terminateManyAt: ([config, backends, refs, options, verdicts], ctx) =>
    new BackendTerminator(config, {
      targets: (findings) => targetsOfRefs(refs, findings),
      ...(verdicts ? { plan: new GivenVerdicts(refs, verdicts) } : {}),
    }).terminateMany(backends, withSignal(options, ctx)),
  terminateUDPConnectionsToBackend: ([backend, options], ctx) =>
    terminateUDPConnectionsToBackend(backend, withSignal(options, ctx)),
  probe: () => probe(),
  deleteConntrack: ([query], ctx) => deleteConntrack(withSignal(query, ctx)),
};

export const streams: Streams = {
  iterateSockets: ([query]) => iterateSockets(query),
  iterateConntrack: ([query]) => iterateConntrack(query),
  watchSockets: ([query]) => watching(new SocketWatch(query)),
};

/**
 * The caller's options with the worker's signal in them. Anything but an object goes as it is: the
 * library refuses it as a sync call would, and the error crosses back with its class and code.
 */
function withSignal<T>(options: T, ctx: Pick<CallContext, "signal">): T {
  if (!isOptionsObject(options)) return options;
  return { ...options, signal: ctx.signal };
}

/** A watch as a stream: the sockets freed so far, then `null` until more are. */
function watching(watch: SocketWatch): Iterable<InetSocket | null> & Pick<SocketWatch, "failures" | "notes"> {
  return {
    failures: watch.failures,
    notes: watch.notes,
    *[Symbol.iterator]() {
      try {
        for (;;) {
          const freed = watch.poll(0);
          if (freed.length === 0) yield null;
          else yield* freed;
        }
      } finally {
        watch.close();
      }
    },
  };
}

/** Send every socket of `iteration`: as the kernel's bytes where nothing needs it decoded first. */
function emitAll(
  iteration: ReturnType<typeof iterateSockets>,
  ctx: CallContext,
): { failures: NamespaceFailure[] } {
  iteration.forEachMessage(ctx.emitInetMessage, ctx.emit);
  return { failures: iteration.failures };
}
