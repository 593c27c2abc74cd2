/**
 * unix_diag wire formats (/usr/include/linux/unix_diag.h): struct unix_diag_req, and
 * struct unix_diag_msg with its attributes decoded into a UnixSocket.
 */
import { isUtf8 } from "node:buffer";
import {
  DecodeError,
  DecodeScratch,
  type MessageWriter,
  NLM_F_DUMP,
  NLM_F_REQUEST,
} from "../netlink/index.js";
import {
  AF_UNIX,
  SOCK_DIAG_BY_FAMILY,
  UNIX_DIAG_ICONS,
  UNIX_DIAG_MEMINFO,
  UNIX_DIAG_NAME,
  UNIX_DIAG_PEER,
  UNIX_DIAG_RQLEN,
  UNIX_DIAG_SHUTDOWN,
  UNIX_DIAG_UID,
  UNIX_DIAG_VFS,
} from "./constants.js";
import { decodeSkMemInfo } from "./meminfo.js";
import { UnixSocket, type UnixType } from "./unix-socket.js";

/** sizeof(struct unix_diag_req). */
export const UNIX_DIAG_REQ_LEN = 24;
/** sizeof(struct unix_diag_msg). */
export const UNIX_DIAG_MSG_LEN = 16;

/**
 * Append a unix_diag dump request:
 *   __u8 sdiag_family; __u8 sdiag_protocol; __u16 pad; __u32 udiag_states; __u32 udiag_ino;
 *   __u32 udiag_show; __u32 udiag_cookie[2];
 * `show` is a set of UDIAG_SHOW_* bits. Allocates nothing.
 */
export function writeUnixDumpRequest(w: MessageWriter, seq: number, states: number, show: number): void {
  w.begin(SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP, seq);
  const o = w.reserve(UNIX_DIAG_REQ_LEN);
  const b = w.buf;
  b[o] = AF_UNIX;
  b.writeUInt32LE(states >>> 0, o + 4);
  b.writeUInt32LE(show >>> 0, o + 12);
  // udiag_cookie = INET_DIAG_NOCOOKIE: not used by dumps, set as ss does.
  b.writeUInt32LE(0xffffffff, o + 16);
  b.writeUInt32LE(0xffffffff, o + 20);
  w.end();
}

const TYPES: Readonly<Record<number, UnixType>> = { 1: "stream", 2: "dgram", 5: "seqpacket" };

/**
 * Decode struct unix_diag_msg at buf[o, o + len):
 *   __u8 udiag_family, udiag_type, udiag_state, pad; __u32 udiag_ino; __u32 udiag_cookie[2];
 * then the attributes that were asked for; `scratch` is reused from one message to the next when
 * the caller passes one. Throws DecodeError on malformed bytes.
 */
export function decodeUnixDiagMsg(
  buf: Buffer,
  o: number,
  len: number,
  scratch: DecodeScratch = new DecodeScratch(),
): UnixSocket {
  if (len < UNIX_DIAG_MSG_LEN || o + len > buf.length) {
    throw new DecodeError("unix_diag_msg", o, `${len} bytes, needs ${UNIX_DIAG_MSG_LEN}`);
  }
  const type = TYPES[buf[o + 1]!];
  if (!type) throw new DecodeError("unix_diag_msg", o + 1, `unknown socket type ${buf[o + 1]}`);
  const cookie = scratch.view(buf).getBigUint64(o + 8, true);
  const s = new UnixSocket(type, buf[o + 2]!, buf.readUInt32LE(o + 4), cookie);
  const a = scratch.attrs.reset(buf, o + UNIX_DIAG_MSG_LEN, o + len, "unix_diag_msg attributes");
  while (a.next()) {
    switch (a.type) {
      case UNIX_DIAG_NAME:
        decodeName(s, buf, a.offset, a.length);
        break;
      case UNIX_DIAG_VFS:
        // struct unix_diag_vfs { __u32 udiag_vfs_ino; __u32 udiag_vfs_dev; }
        if (a.need(8)) s.vfs = { ino: buf.readUInt32LE(a.offset), dev: buf.readUInt32LE(a.offset + 4) };
        break;
      case UNIX_DIAG_PEER:
        s.peer = a.u32();
        break;
      case UNIX_DIAG_ICONS: {
        const icons: number[] = [];
        for (let i = 0; i + 4 <= a.length; i += 4) icons.push(buf.readUInt32LE(a.offset + i));
        s.icons = icons;
        break;
      }
      case UNIX_DIAG_RQLEN:
        // struct unix_diag_rqlen { __u32 udiag_rqueue; __u32 udiag_wqueue; }
        if (a.need(8)) {
          s.rqueue = buf.readUInt32LE(a.offset);
          s.wqueue = buf.readUInt32LE(a.offset + 4);
        }
        break;
      case UNIX_DIAG_MEMINFO:
        if (a.need(32)) s.skmem = decodeSkMemInfo(buf, a.offset, a.length);
        break;
      case UNIX_DIAG_SHUTDOWN:
        s.shutdown = a.u8();
        break;
      case UNIX_DIAG_UID:
        s.uid = a.u32();
        break;
    }
  }
  if (a.error) throw a.error;
  return s;
}

/**
 * A sun_path as ss prints it, as UTF-8 text: an abstract name (leading NUL) as "@" + the rest,
 * with embedded NULs also shown as "@"; a path name up to its terminating NUL. Where that text
 * does not say the bytes (they are not UTF-8, or an abstract name holds a NUL), `nameBytes` keeps
 * them as the kernel gave them.
 */
function decodeName(s: UnixSocket, buf: Buffer, o: number, len: number): void {
  const abstract = len > 0 && buf[o] === 0;
  const nul = abstract ? -1 : buf.indexOf(0, o);
  const end = nul >= 0 && nul < o + len ? nul : o + len;
  const text = buf.toString("utf8", abstract ? o + 1 : o, end);
  if (!abstract) s.name = text;
  else s.name = `@${text.includes("\0") ? text.replaceAll("\0", "@") : text}`;
  if ((abstract && text.includes("\0")) || (text.includes("\uFFFD") && !isUtf8(buf.subarray(o, end))))
    s.nameBytes = Buffer.from(buf.subarray(o, end));
}
