/**
 * Request serialisation and message parsing, beside the seed-style Go anchor (bench/go) run in the
 * same process tree: each figure of ours as a ratio to Go's, and what the difference is made of.
 */
import { AddressTexts } from "../src/diag/address.js";
import { decodeInetDiagMsg, writeInetDumpRequest } from "../src/diag/inet.js";
import type { InetSocket } from "../src/diag/inet-socket.js";
import { DecodeScratch, MessageWriter } from "../src/netlink/index.js";
import { type GoAnchor, type GoFigure, goFigure, mergeAnchors, runGoAnchor } from "./go-anchor.js";
import { pageFaultCost, type Window, withCollections } from "./machine.js";
import { fmt, type PerOp, perOp, recordGoal, row } from "./measure.js";

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
function rounds(fn: (i: number) => void, ops: number): PerOp {
  const all = Array.from({ length: 11 }, () => perOp(fn, ops)).sort((a, b) => a.nsPerOp - b.nsPerOp);
  return all[5]!;
}

/** "1.78 x Go (goal <= 1.0)", or the reason there is no Go figure. */
function toGo(ours: number, go: GoFigure | undefined, limit?: number): string {
  if (!go) return "(no Go anchor)";
  return `${fmt.ratio(ours, go.nsPerOp)} Go${limit === undefined ? "" : ` (goal <= ${limit})`}`;
}

/** A minor page fault's cost on this machine, measured once (see pageFaultCost). */
let faultNs: number | undefined;

/**
 * "collections 12 ns/op; 4,292 page faults, ~180 ns/op": what the machine's memory costs within a
 * round: the collections' time and the page faults, priced at what a fault costs here.
 */
function machineCost(r: PerOp, ops: number, gcMs: (w: readonly Window[]) => number): string {
  faultNs ??= pageFaultCost();
  const gcNs = (gcMs([r.window]) * 1e6) / ops;
  const faults = r.faults.minor + r.faults.major;
  return `collections ${gcNs.toFixed(0)} ns/op; ${faults} page faults, ~${((faults * faultNs) / ops).toFixed(0)} ns/op`;
}

export async function benchCodec(): Promise<string[]> {
  // Go's runs bracket ours, so that a change of the machine's load hits both.
  const before = runGoAnchor();
  const { result, gcMs } = await withCollections(measure);
  const anchor: GoAnchor = mergeAnchors(before, runGoAnchor());
  const go = "missing" in anchor ? undefined : (name: string) => goFigure(anchor, name);
  const goRow = (label: string, f: GoFigure) =>
    row(label, `${f.nsPerOp.toFixed(0)} ns/op`, `${f.bytesPerOp} B/op, ${f.allocsPerOp} allocs/op`);
  const out = ["request serialisation and message parsing, beside the seed-style Go anchor (bench/go)"];
  if (go && !("missing" in anchor)) {
    out.push(
      `  ${anchor.version}, go test -bench -benchmem, medians of 6 runs (3 before ours, 3 after):`,
      goRow("Go: serialise a dump request into a fresh buffer, 72 B", go("Serialize")),
      goRow("Go: parse an inet_diag_msg into net.IP fields, read all", go("Parse")),
      goRow("Go: the same, both addresses as text too (IP.String)", go("ParseAddressText")),
    );
  } else {
    out.push(`  ${"missing" in anchor ? anchor.missing : ""}; the Go rows and ratios are skipped`);
  }
  const { ser, serFloor, parse, parseWarm, parseLoose, texts, parseAttrs, parseAlone, ops } = result;
  const goSer = go?.("Serialize");
  const goParse = go?.("Parse");
  if (goSer) recordGoal("serialise a dump request / Go", ser.nsPerOp / goSer.nsPerOp, 1.0);
  if (goParse)
    recordGoal(
      "parse a socket, read every field (attributes skipped) / Go",
      parse.nsPerOp / goParse.nsPerOp,
      1.0,
    );
  out.push(
    "  sockdiag:",
    row(
      "serialise a dump request: nlmsghdr + inet_diag_req_v2, 72 B",
      `${ser.nsPerOp.toFixed(0)} ns/op`,
      `${toGo(ser.nsPerOp, goSer, 1.0)}; ${ser.bytesPerOp.toFixed(1)} bytes/op (into a reused buffer)`,
    ),
    row(
      "  the same bytes by hand (typed-array stores, no writer)",
      `${serFloor.nsPerOp.toFixed(0)} ns/op`,
      toGo(serFloor.nsPerOp, goSer),
    ),
    "  parse one UDP inet_diag_msg (72 B + SHUTDOWN, CGROUP_ID, SOCKOPT) into a plain-data InetSocket, as a",
    "  dump does (its DecodeScratch and AddressTexts; 6 sources, 2 destinations), kept in an array as a",
    "  listing keeps them (their collection counted), then read its 17 fields; median of 11 rounds:",
    row(
      "parse a socket, read every field (attributes skipped)",
      `${parse.nsPerOp.toFixed(0)} ns/op`,
      `${toGo(parse.nsPerOp, goParse, 1.0)}; ${parse.bytesPerOp.toFixed(1)} bytes/op`,
    ),
    row("", "", machineCost(parse, ops, gcMs)),
    row("", "", `(a page fault costs ~${faultNs!.toFixed(0)} ns here: first writes to 64 MB of new memory)`),
    "  what the difference is made of:",
    row(
      "the same, not kept (as Go's: the young generation dies)",
      `${parseLoose.nsPerOp.toFixed(0)} ns/op`,
      `${toGo(parseLoose.nsPerOp, goParse)}; ${machineCost(parseLoose, ops, gcMs)}`,
    ),
    row(
      "the same, kept, young generation already mapped",
      parseWarm.rounds > 0 ? `${parseWarm.nsPerOp.toFixed(0)} ns/op` : "-",
      parseWarm.rounds > 0
        ? `${toGo(parseWarm.nsPerOp, goParse)}; fastest of ${parseWarm.rounds} of 11 rounds without a page fault (no gc() between)`
        : "no round of 11 without a page fault (no gc() between)",
    ),
    row(
      "its address texts alone (AddressTexts src + dst)",
      `${texts.nsPerOp.toFixed(0)} ns/op`,
      `${texts.bytesPerOp.toFixed(1)} bytes/op; Go's address text: ${
        go ? `${(go("ParseAddressText").nsPerOp - go("Parse").nsPerOp).toFixed(0)} ns/op` : "-"
      }`,
    ),
    row(
      "attributes decoded too (shutdown, cgroupId), kept, read",
      `${parseAttrs.nsPerOp.toFixed(0)} ns/op`,
      `${toGo(parseAttrs.nsPerOp, goParse)}; ${parseAttrs.bytesPerOp.toFixed(1)} bytes/op; ${machineCost(parseAttrs, ops, gcMs)}`,
    ),
    row(
      "one message alone (its own DataView, addresses formatted)",
      `${parseAlone.nsPerOp.toFixed(0)} ns/op`,
      `${toGo(parseAlone.nsPerOp, go?.("ParseAddressText"))} with text; ${parseAlone.bytesPerOp.toFixed(1)} bytes/op`,
    ),
  );
  return out;
}

/** Our figures; the caller observes the collections meanwhile. */
function measure() {
  const writer = new MessageWriter(Buffer.alloc(4096));
  const req = { family: 2, protocol: 17, ext: 0, states: 0xfff };
  // Into a reused buffer, header included: what each dump costs before its send.
  const ser = rounds((i) => writeInetDumpRequest(writer.reset(), i, req), 200_000);
  // The floor under it: the same 72 bytes stored by hand (host order is little-endian here).
  const words = new Uint32Array(18);
  const bytes = new Uint8Array(words.buffer);
  const serFloor = rounds((i) => {
    words.fill(0);
    words[0] = 72;
    words[1] = 20 | (0x301 << 16); // SOCK_DIAG_BY_FAMILY, NLM_F_REQUEST | NLM_F_DUMP
    words[2] = i;
    bytes[16] = 2;
    bytes[17] = 17;
    words[5] = 0xfff;
    words[16] = 0xffffffff;
    words[17] = 0xffffffff;
  }, 200_000);

  const { buf, offsets } = messages(100_000);
  const ops = offsets.length;
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
  const kept: InetSocket[] = new Array(ops);
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
  const parse = rounds((i) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, plain);
    kept[i] = s;
    sink += readAll(s);
  }, ops);
  kept.fill(undefined as unknown as InetSocket);
  const loose = dump(false);
  const parseLoose = rounds((i) => {
    sink += readAll(decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, loose));
  }, ops);
  const addressTexts = new AddressTexts();
  const view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength);
  const texts = rounds((i) => {
    const o = offsets[i]!;
    sink += addressTexts.src(view, o + 8, false).length + addressTexts.dst(view, o + 24, false).length;
  }, ops);
  const withAttributes = dump(true);
  const parseAttrs = rounds((i) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, withAttributes);
    kept[i] = s;
    sink += readAll(s) + s.shutdown! + (s.cgroupId === 0n ? 0 : 1);
  }, ops);
  const alone = { protocol: "udp" as const, attributes: false };
  const parseAlone = rounds((i) => {
    const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, alone);
    kept[i] = s;
    sink += readAll(s);
  }, ops);
  // Last, since it leaves the young generation grown: the kept parse without a full collection
  // between rounds, whose rounds without a page fault show it without the machine's memory cost.
  const warm = dump(false);
  const warmRounds = Array.from({ length: 11 }, () =>
    perOp(
      (i) => {
        const s = decodeInetDiagMsg(buf, offsets[i]!, MSG_LEN, warm);
        kept[i] = s;
        sink += readAll(s);
      },
      ops,
      false,
    ),
  );
  const noFault = warmRounds.filter((r) => r.faults.minor + r.faults.major === 0);
  const parseWarm = {
    rounds: noFault.length,
    nsPerOp: noFault.length > 0 ? Math.min(...noFault.map((r) => r.nsPerOp)) : Number.NaN,
  };
  if (sink === -1) throw new Error("unreachable");
  return { ser, serFloor, parse, parseWarm, parseLoose, texts, parseAttrs, parseAlone, ops };
}
