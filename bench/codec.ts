/** Request serialisation and message parsing: ns/op and bytes/op. */
import { AddressTexts } from "../src/diag/address.js";
import { decodeInetDiagMsg, writeInetDumpRequest } from "../src/diag/inet.js";
import type { InetSocket } from "../src/diag/inet-socket.js";

import { DecodeScratch, MessageWriter } from "../src/netlink/index.js";
import { fmt, perOp, recordGoal, row } from "./measure.js";

/** inet_diag_msg and the attributes a UDP dump always carries: SHUTDOWN, CGROUP_ID, SOCKOPT. */
const MSG_LEN = 72 + 8 + 12 + 8;

/**
 * A receive buffer holding `count` inet_diag_msg of IPv4 UDP sockets, as the kernel sends them, with
 * the addresses of the list bench's scene: bound to one of 6 local addresses, half of them
 * connected to one remote address, the others unconnected.
 */
function messages(count: number): { buf: Buffer; offsets: number[] } {
  const msgLen = 16 + MSG_LEN;
  const buf = Buffer.alloc(count * msgLen);
  const offsets: number[] = [];
  for (let i = 0; i < count; i++) {
    const o = i * msgLen;
    buf.writeUInt32LE(msgLen, o);
    buf.writeUInt16LE(20, o + 4);
    const m = o + 16;
    buf[m] = 2; // AF_INET
    buf[m + 1] = 1; // ESTABLISHED
    buf.writeUInt16BE(1024 + (i % 60000), m + 4);
    buf.writeUInt16BE(53, m + 6);
    buf.writeUInt32BE(0x7f000001 + 256 * (1 + (i % 6)), m + 8);
    if (i % 2 === 0) buf.writeUInt32BE(0x7f00000a, m + 24);
    buf.writeUInt32LE(i, m + 44);
    buf.writeUInt32LE(1, m + 48);
    buf.writeUInt32LE(100000 + i, m + 68);
    let a = m + 72;
    for (const [type, len] of [
      [8, 5],
      [21, 12],
      [22, 6],
    ] as const) {
      buf.writeUInt16LE(len, a);
      buf.writeUInt16LE(type, a + 2);
      if (type === 21) buf.writeBigUInt64LE(4242n + BigInt(i % 3), a + 4); // 3 cgroups
      a += (len + 3) & ~3;
    }
    offsets.push(m);
  }
  return { buf, offsets };
}

/**
 * perOp over 11 rounds of `ops` calls, the round of median time: the first rounds of 100,000 kept
 * sockets also pay for the young generation growing to the size a long listing gives it.
 */
function rounds(fn: (i: number) => void, ops: number): { nsPerOp: number; bytesPerOp: number } {
  const all = Array.from({ length: 11 }, () => perOp(fn, ops)).sort((a, b) => a.nsPerOp - b.nsPerOp);
  return all[5]!;
}

export function benchCodec(): string[] {
  const out = ["request serialisation and message parsing"];
  const writer = new MessageWriter(Buffer.alloc(4096));
  const req = { family: 2, protocol: 17, ext: 0, states: 0xfff };
  // Into a reused buffer, header included: what each dump costs before its send.
  const ser = perOp((i) => writeInetDumpRequest(writer.reset(), i, req), 200_000);
  recordGoal("serialise a dump request", ser.nsPerOp, 100, "ns");
  out.push(
    row(
      "serialise a dump request: nlmsghdr + inet_diag_req_v2, 72 B",
      `${ser.nsPerOp.toFixed(0)} ns/op`,
      `${ser.bytesPerOp.toFixed(1)} bytes/op`,
    ),
  );

  const { buf, offsets } = messages(100_000);
  // What a dump keeps from one message to the next: a DataView per receive chunk and an attribute
  // reader (DecodeScratch), and the texts of the addresses met so far (AddressTexts).
  const dump = (attributes: boolean) => ({
    protocol: "udp" as const,
    attributes,
    texts: new AddressTexts(),
    scratch: new DecodeScratch(),
  });
  let sink = 0;
  // Each op keeps its socket, as a listing does (the collector then has them to move).
  const kept: InetSocket[] = new Array(offsets.length);
  // Every field of the plain-data socket is decoded when it is made (addresses as text, the
  // cookie as a bigint): each op decodes one message, then reads each documented field once.
  const readAll = (s: InetSocket) =>
    s.sport +
    s.dport +
    s.src.length +
    s.dst.length +
    (s.cookie === 0n ? 0 : 1) +
    s.inode +
    s.uid +
    s.rqueue +
    s.wqueue +
    s.ifindex +
    s.state.length +
    s.family.length +
    s.protocol.length +
    s.timer +
    s.retrans +
    s.expires +
    (s.netns === undefined ? 0 : 1);
  const plain = dump(false);
  const parseOne = (i: number) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, plain);
    kept[i] = s;
    sink += readAll(s);
  };
  const parse = rounds(parseOne, offsets.length);
  recordGoal("parse a socket, read every field (attributes skipped)", parse.nsPerOp, 150, "ns");
  out.push(
    "  parse one UDP inet_diag_msg (72 B + SHUTDOWN, CGROUP_ID, SOCKOPT) into a plain-data InetSocket, as a",
    "  dump does (its DecodeScratch and AddressTexts; 6 sources, 2 destinations), kept in an array as a",
    "  listing keeps them (their collection counted), then read its 17 fields; median of 11 rounds:",
    row(
      "attributes skipped (listSockets without extensions)",
      `${parse.nsPerOp.toFixed(0)} ns/op`,
      `${parse.bytesPerOp.toFixed(1)} bytes/op (goal <= 150 ns)`,
    ),
  );
  const withAttributes = dump(true);
  const parseAttrs = rounds((i) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, withAttributes);
    kept[i] = s;
    sink += readAll(s) + s.shutdown! + (s.cgroupId === 0n ? 0 : 1);
  }, offsets.length);
  recordGoal("parse a socket with its attributes, read every field", parseAttrs.nsPerOp, 150, "ns");
  out.push(
    row(
      "attributes decoded too (shutdown, cgroupId) and read",
      `${parseAttrs.nsPerOp.toFixed(0)} ns/op`,
      `${parseAttrs.bytesPerOp.toFixed(1)} bytes/op (goal <= 150 ns)`,
    ),
  );
  const alone = { protocol: "udp" as const, attributes: false };
  const parseAlone = rounds((i) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, alone);
    kept[i] = s;
    sink += readAll(s);
  }, offsets.length);
  out.push(
    row(
      "one message alone (a DataView of its own, both addresses formatted)",
      `${parseAlone.nsPerOp.toFixed(0)} ns/op`,
      `${parseAlone.bytesPerOp.toFixed(1)} bytes/op`,
    ),
  );
  if (sink === -1) out.push(fmt.ms(0));
  return out;
}
