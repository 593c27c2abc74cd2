/** The messages between sockdiag/promises and its worker. */
import type { CallName, StreamName } from "./ops.js";
import type { Packed } from "./pack.js";
import type { SocketChunk } from "./wire.js";

export type ToWorker =
  /** Run a call; `abort` holds one Int32, set when the caller's signal aborts. */
  | { t: "call"; id: number; op: CallName; args: Packed; abort: SharedArrayBuffer }
  /** Open a stream and send its first chunk. */
  | { t: "open"; id: number; op: StreamName; args: Packed; abort: SharedArrayBuffer }
  /** Send the stream's next chunk. */
  | { t: "pull"; id: number }
  /** End the stream now, releasing what it holds. */
  | { t: "close"; id: number };

export type ToMain =
  /** Items of a stream or call; `met`: a stream's new `{ failures, notes }` since its last chunk. */
  | { t: "chunk"; id: number; chunk: SocketChunk; met?: Packed; done?: boolean }
  | { t: "done"; id: number; result: Packed }
  | { t: "fail"; id: number; error: Packed }
  /** Call the caller's function `fn` of call `id`; the answer goes through the reply port. */
  | { t: "callback"; id: number; fn: number; args: Packed };

/** The answer to a callback. */
export interface Reply {
  result?: Packed;
  error?: Packed;
}
