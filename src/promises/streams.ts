/**
 * The streams of sockdiag/promises: a pass over a query's sockets, and a watch of sockets as the
 * kernel frees them. Both pull from the worker chunk by chunk and release its side when they end.
 */
import type { InetSocket, Socket } from "../diag/socket.js";
import { checkNamespaceSelection, type NamespaceFailure, type NamespaceSelection } from "../netns/index.js";
import { checkPositiveInteger, isOptionsObject } from "../options/index.js";
import type { NamespacedQuery, WatchQuery } from "../sockets/index.js";
import { type Abortable, type ChunkStream, client } from "./client.js";
import type { StreamMap } from "./ops.js";
import type { StreamItem } from "./wire.js";

export type { Abortable };

/**
 * A call's options and its control (signal, callbackTimeout), apart: the control stays on the
 * caller's thread, the rest goes to the worker. Their namespace selection is checked here, as the
 * sync call checks it (a forged or closed handle cannot be sent, and nothing is posted for a call
 * that would be refused). Anything but an object goes as it is, for the library to refuse with the
 * error a sync call gives (a QueryError naming it), never a TypeError from taking it apart here.
 * Throws QueryError for a callbackTimeout that is not a whole number of ms of at least 1.
 */
export function splitControl<T extends Abortable>(options: T): [Omit<T, keyof Abortable>, Abortable] {
  // A caller outside the types: its value goes on as it is, for the library to refuse.
  if (!isOptionsObject(options)) return [options as Omit<T, keyof Abortable>, {}];
  checkNamespaceSelection(options as NamespaceSelection);
  const { signal, callbackTimeout, ...rest } = options;
  checkPositiveInteger(callbackTimeout, "callbackTimeout");
  return [rest, { signal, callbackTimeout }];
}

/** A query of listSockets / iterateSockets, with its signal. */
export type AsyncQuery = NamespacedQuery & Abortable;

/**
 * AsyncSocketIteration streams the sockets of a query: `for await` pulls them by chunks from the
 * worker, a couple of chunks ahead at most (memory stays flat), and breaking out of the loop
 * releases the worker's netlink sockets and handles at once. `failures` grows as namespaces fail
 * (netns "all"), `notes` as namespaces are passed over (vanished). Each `for await` is a fresh pass.
 */
export class AsyncSocketIteration<S extends Socket = Socket> implements AsyncIterable<S> {
  readonly failures: NamespaceFailure[] = [];
  readonly notes: StreamMap["iterateSockets"]["note"][] = [];

  constructor(private readonly query: AsyncQuery) {}

  async *[Symbol.asyncIterator](): AsyncGenerator<S> {
    const [rest, { signal }] = splitControl(this.query);
    this.failures.length = 0;
    this.notes.length = 0;
    // The query's protocols decide which sockets come, as in sockdiag's SocketIteration.
    yield* drain(client.open("iterateSockets", [rest], signal), this) as AsyncGenerator<S>;
  }
}

/**
 * The items of a worker stream, chunk by chunk as the consumer pulls; the failures and notes the
 * stream meets are copied into `into` as they come. Leaving the loop closes the stream.
 */
export async function* drain<T extends StreamItem, N>(
  stream: ChunkStream<T, N>,
  into?: { failures: NamespaceFailure[]; notes?: N[] },
): AsyncGenerator<T> {
  let failed = 0;
  let noted = 0;
  try {
    for (;;) {
      const items = await stream.next();
      for (; failed < stream.failures.length; failed++) into?.failures.push(stream.failures[failed]!);
      for (; noted < stream.notes.length; noted++) into?.notes?.push(stream.notes[noted]!);
      if (!items) return;
      yield* items;
    }
  } finally {
    stream.close();
  }
}

/**
 * SocketWatchStream is the stream of sockets as the kernel frees them (see watchSockets). It
 * subscribes at once; `ready` resolves when the subscriptions are in place. One `for await` reads
 * it; breaking out, close(), or the signal (AbortError) ends it and releases every subscription.
 */
export class SocketWatchStream implements AsyncIterable<InetSocket> {
  readonly #stream: ChunkStream<InetSocket, StreamMap["watchSockets"]["note"]>;
  /** Resolves once every namespace is subscribed: sockets freed from then on are told. */
  readonly ready: Promise<void>;

  constructor(query: WatchQuery & Abortable) {
    const [rest, { signal }] = splitControl(query);
    this.#stream = client.open("watchSockets", [rest], signal);
    this.ready = this.#stream.ready;
  }

  /** Namespaces that could not be watched (netns "all"), as they are met. */
  get failures(): readonly NamespaceFailure[] {
    return this.#stream.failures;
  }

  /** Namespaces passed over (vanished, a pin that holds none), as they are met. */
  get notes(): readonly StreamMap["watchSockets"]["note"][] {
    return this.#stream.notes;
  }

  async *[Symbol.asyncIterator](): AsyncGenerator<InetSocket> {
    yield* drain(this.#stream);
  }

  /** Stop watching now. */
  close(): void {
    this.#stream.close();
  }
}
