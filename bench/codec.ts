/** Request serialisation and message parsing: ns/op and bytes/op. */
import { decodeInetDiagMsg, writeInetDumpRequest } from "../src/diag/inet.js";
import { AddressTexts } from "../src/diag/socket.js";
import { MessageWriter } from "../src/netlink/index.js";
import { fmt, perOp, recordGoal, row } from "./measure.js";

/** A receive buffer holding `count` inet_diag_msg of connected IPv4 UDP sockets, as the kernel sends them. */
function messages(count: number): { buf: Buffer; offsets: number[] } {
  const msgLen = 16 + 72 + 8 + 12 + 8; // header, inet_diag_msg, SHUTDOWN, CGROUP_ID, SOCKOPT attributes
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
    buf.writeUInt32BE(0x7f000001, m + 8);
    buf.writeUInt32BE(0x0a000005, m + 24);
    buf.writeUInt32LE(i, m + 44);
    buf.writeUInt32LE(100000 + i, m + 68);
    let a = m + 72;
    for (const [type, len] of [
      [8, 5],
      [21, 12],
      [22, 6],
    ] as const) {
      buf.writeUInt16LE(len, a);
      buf.writeUInt16LE(type, a + 2);
      a += (len + 3) & ~3;
    }
    offsets.push(m);
  }
  return { buf, offsets };
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
  // Every field of the plain-data socket is decoded when it is made (addresses as text, the
  // cookie as a bigint); reading one afterwards is a property load.
  const options = { protocol: "udp" as const, attributes: false };
  let sink = 0;
  // Each op decodes one message and then reads every documented field of the socket.
  const readAll = (s: ReturnType<typeof decodeInetDiagMsg>) =>
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
    s.expires;
  const parse = perOp((i) => {
    sink += readAll(decodeInetDiagMsg(buf, offsets[i]!, 72 + 28, options));
  }, offsets.length);
  out.push(
    row(
      "parse inet_diag_msg into a plain-data Socket and read every field (both addresses formatted)",
      `${parse.nsPerOp.toFixed(0)} ns/op`,
      `${parse.bytesPerOp.toFixed(1)} bytes/op (goal <= 150 ns)`,
    ),
  );
  const dumpOptions = { ...options, texts: new AddressTexts() };
  const parseDump = perOp((i) => {
    sink += readAll(decodeInetDiagMsg(buf, offsets[i]!, 72 + 28, dumpOptions));
  }, offsets.length);
  out.push(
    row(
      "the same, the address text reused from the previous socket (as a dump does; same addresses)",
      `${parseDump.nsPerOp.toFixed(0)} ns/op`,
      `${parseDump.bytesPerOp.toFixed(1)} bytes/op (goal <= 150 ns)`,
    ),
  );
  const withAttrs = { protocol: "udp" as const, attributes: true, texts: new AddressTexts() };
  const parseAttrs = perOp((i) => {
    sink += decodeInetDiagMsg(buf, offsets[i]!, 72 + 28, withAttrs).sport;
  }, offsets.length);
  out.push(
    row(
      "parse inet_diag_msg with its attributes",
      `${parseAttrs.nsPerOp.toFixed(0)} ns/op`,
      `${parseAttrs.bytesPerOp.toFixed(1)} bytes/op`,
    ),
  );
  if (sink === -1) out.push(fmt.ms(0));
  return out;
}
