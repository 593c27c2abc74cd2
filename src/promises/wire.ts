/**
 * Sockets across threads, by chunks: the worker copies each inet socket's struct inet_diag_msg as the
 * kernel sent it (or writes a socket object back into one) into a chunk whose ArrayBuffer is
 * transferred, not copied, and the receiving thread decodes them with the same decoder a
 * synchronous listing uses. One structured clone per chunk
 * instead of one per socket, and the sockets that come out are InetSockets equal, field for field,
 * to what a sync call makes. Decoded attributes, which only some listings ask for, travel as a
 * plain object beside the bytes (their nested objects, tcp_info and skmem, as structured clones).
 * Plain-data items (conntrack entries) ride in the same chunks as structured-clone values, so every
 * stream shares one chunking and back-pressure path.
 */
import { AddressTexts } from "../diag/address.js";
import { decodeInetDiagMsg, type InetDecodeOptions } from "../diag/inet.js";
import {
  FIELD_SOCKET_CLASSES,
  INET_DIAG_MSG_LEN,
  type InetProtocol,
  InetSocket,
  type Socket,
  type SocketNetns,
  writeInetDiagMsg,
} from "../diag/socket.js";
import { DecodeScratch } from "../netlink/index.js";
import { PROTOCOL_NAMES } from "../sockets/index.js";

/** What a chunk carries: sockets, or plain data objects (cloned as they are). */
export type StreamItem = Socket | PlainItem;
/** A plain data object (no class, no function): a conntrack entry. */
export type PlainItem = { readonly family: string } & object;

/** A chunk of items as it crosses threads. */
export interface SocketChunk {
  /**
   * Records of 8 bytes: u8 kind, u8 protocol index, u16 label index (0xffff: none), u32 value index
   * (0xffffffff: none); an inet socket's is followed by its struct inet_diag_msg.
   */
  buf: ArrayBuffer;
  used: number;
  /** The namespaces the sockets were listed in, referred to by index. */
  labels: SocketNetns[];
  /** Sockets of FIELD_SOCKET_CLASSES and plain items (their fields), inet sockets' attributes, by index. */
  values: object[];
}

const INET = 1;
const PLAIN = 2;
/** The record kind of FIELD_SOCKET_CLASSES[i], carried as its fields and rebuilt with its class. */
const FIELD_KIND = 3;

/** The record kind of `item`: INET, FIELD_KIND + its class's index, or PLAIN. */
function kindOf(item: unknown): number {
  if (item instanceof InetSocket) return INET;
  const i = FIELD_SOCKET_CLASSES.findIndex((c) => item instanceof c);
  return i < 0 ? PLAIN : FIELD_KIND + i;
}
const HEADER = 8;
const NO_LABEL = 0xffff;
const NO_VALUE = 0xffffffff;
/** Sockets per chunk at most: a chunk decodes in well under a millisecond. */
export const CHUNK_SOCKETS = 2048;
const CHUNK_BYTES = 256 * 1024;

const protocolIndex = new Map(PROTOCOL_NAMES.map((p, i) => [p as string, i]));

/** ChunkWriter collects items into chunks; take() hands the current one over and starts anew. */
export class ChunkWriter {
  #bytes = new Uint8Array(CHUNK_BYTES);
  #view = new DataView(this.#bytes.buffer);
  #used = 0;
  #count = 0;
  #labels: SocketNetns[] = [];
  #labelIndex = new Map<SocketNetns | undefined, number>();
  #values: object[] = [];

  get count(): number {
    return this.#count;
  }

  /** Whether the chunk should go now. */
  get full(): boolean {
    return this.#count >= CHUNK_SOCKETS || this.#used > CHUNK_BYTES - 1024;
  }

  /** Append `item`; returns its index in the chunk. */
  add(item: StreamItem): number {
    const index = this.#count;
    const kind = kindOf(item);
    if (kind === PLAIN) {
      this.#record(PLAIN, 0, 0, this.#values.push(item as PlainItem) - 1, 0);
      return index;
    }
    const label = this.#labelOf((item as Socket).netns);
    if (kind !== INET) {
      this.#record(kind, 0, label, this.#values.push({ ...(item as Socket) }) - 1, 0);
      return index;
    }
    const s = item as InetSocket;
    const protocol = protocolIndex.get(s.protocol)!;
    const value = s.hasAttributes ? this.#values.push(attributesOf(s)) - 1 : NO_VALUE;
    writeInetDiagMsg(this.#view, this.#record(INET, protocol, label, value, INET_DIAG_MSG_LEN), s);
    return index;
  }

  /** Append an inet socket as the kernel's struct inet_diag_msg at `buf[offset]`. */
  addInetMessage(buf: Buffer, offset: number, protocol: InetProtocol, netns: SocketNetns | undefined): void {
    const at = this.#record(
      INET,
      protocolIndex.get(protocol)!,
      this.#labelOf(netns),
      NO_VALUE,
      INET_DIAG_MSG_LEN,
    );
    this.#bytes.set(buf.subarray(offset, offset + INET_DIAG_MSG_LEN), at);
  }

  /** The chunk so far (its buffer is to be transferred); the writer starts a new one. */
  take(): SocketChunk {
    const chunk: SocketChunk = {
      buf: this.#bytes.buffer as ArrayBuffer,
      used: this.#used,
      labels: this.#labels,
      values: this.#values,
    };
    this.#bytes = new Uint8Array(CHUNK_BYTES);
    this.#view = new DataView(this.#bytes.buffer);
    this.#used = 0;
    this.#count = 0;
    this.#labels = [];
    this.#labelIndex.clear();
    this.#values = [];
    return chunk;
  }

  /** Write a record's header with room for `body` bytes after it; returns where the body goes. */
  #record(kind: number, protocol: number, label: number, value: number, body: number): number {
    this.#reserve(HEADER + body);
    const v = this.#view;
    const o = this.#used;
    v.setUint8(o, kind);
    v.setUint8(o + 1, protocol);
    v.setUint16(o + 2, label, true);
    v.setUint32(o + 4, value, true);
    this.#used = o + HEADER + body;
    this.#count++;
    return o + HEADER;
  }

  #labelOf(netns: SocketNetns | undefined): number {
    let label = this.#labelIndex.get(netns);
    if (label === undefined) {
      label = netns === undefined ? NO_LABEL : this.#labels.length;
      if (netns !== undefined) this.#labels.push(netns);
      this.#labelIndex.set(netns, label);
    }
    return label;
  }

  #reserve(n: number): void {
    if (this.#used + n <= this.#bytes.length) return;
    const bigger = new Uint8Array(Math.max(this.#bytes.length * 2, this.#used + n));
    bigger.set(this.#bytes.subarray(0, this.#used));
    this.#bytes = bigger;
    this.#view = new DataView(bigger.buffer);
  }
}

/** Decode every item of `chunk` into `sink`, in order. */
export function readChunk(chunk: SocketChunk, sink: (item: StreamItem) => void): void {
  const buf = Buffer.from(chunk.buf, 0, chunk.used);
  // One options object for the chunk, its fields set per record: no allocation per socket.
  const decode: InetDecodeOptions & { netns: SocketNetns | undefined } = {
    protocol: "udp",
    attributes: false,
    netns: undefined,
    texts: new AddressTexts(),
    scratch: new DecodeScratch(),
  };
  for (let o = 0; o < chunk.used; ) {
    const kind = buf[o]!;
    const labelIndex = buf.readUInt16LE(o + 2);
    const n = buf.readUInt32LE(o + 4);
    if (kind === INET) {
      decode.protocol = PROTOCOL_NAMES[buf[o + 1]!] as InetProtocol;
      decode.netns = labelIndex === NO_LABEL ? undefined : chunk.labels[labelIndex];
      const s = decodeInetDiagMsg(buf, o + HEADER, INET_DIAG_MSG_LEN, decode);
      if (n !== NO_VALUE) Object.assign(s, chunk.values[n]);
      sink(s);
      o += HEADER + INET_DIAG_MSG_LEN;
    } else {
      const value = chunk.values[n]!;
      const socketClass = kind === PLAIN ? undefined : FIELD_SOCKET_CLASSES[kind - FIELD_KIND];
      sink(
        socketClass
          ? (Object.assign(Object.create(socketClass.prototype), value) as Socket)
          : (value as PlainItem),
      );
      o += HEADER;
    }
  }
}

/** The decoded attributes of `s`: its own properties past the fields every inet socket has. */
function attributesOf(s: InetSocket): object {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(s)) if (!INET_FIELDS.has(key)) out[key] = value;
  return out;
}

const INET_FIELDS = new Set(
  Object.keys(
    InetSocket.build({
      family: "inet",
      protocol: "udp",
      src: "0.0.0.0",
      sport: 0,
      dst: "0.0.0.0",
      dport: 0,
      cookie: 0n,
    }),
  ),
);

/** Resolves in a later turn of the event loop, after the I/O and timers that are due. */
export function yieldTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

/**
 * PacedDecoder decodes chunks as they arrive, one per turn of the event loop: the worker may send
 * many at once (a port delivers every queued message in one go), and decoding them all in one turn
 * would hold up the caller's other callbacks.
 */
export class PacedDecoder {
  readonly #chunks: SocketChunk[] = [];
  #draining: Promise<void> | undefined;

  constructor(private readonly sink: (item: StreamItem) => void) {}

  push(chunk: SocketChunk): void {
    this.#chunks.push(chunk);
    this.#draining ??= this.#drain();
  }

  /** Resolves once every chunk pushed so far is decoded. */
  async drained(): Promise<void> {
    while (this.#draining) await this.#draining;
  }

  async #drain(): Promise<void> {
    try {
      for (let chunk = this.#chunks.shift(); chunk; chunk = this.#chunks.shift()) {
        await yieldTurn();
        readChunk(chunk, this.sink);
      }
    } finally {
      this.#draining = undefined;
    }
  }
}
