/**
 * The table writer on runs of sockets whose neighbours share some fields: every row holds that
 * socket's own cells, in columns as wide as their widest cell, whatever the previous row held.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { LISTING_BATCH_BYTES, renderTable, TableWriter } from "../../src/cli/render/index.js";
import { type InetSocket, UnixSocket } from "../../src/diag/socket.js";
import { socketFromWords } from "../kit/socket-words.js";
import { repeatingInetSockets } from "./repeating-sockets.js";

const display = { options: false, extended: false, memory: false, info: false, processes: false };
const LABELS: Record<string, string> = { close: "UNCONN", established: "ESTAB" };

function endpoint(s: InetSocket, host: string, port: number): string {
  return `${s.family === "inet" ? host : `[${host}]`}:${port === 0 ? "*" : port}`;
}

test("a queue past 2^31 reads negative, as ss prints it: a freed socket's Send-Q is -1", () => {
  const freed = socketFromWords({
    family: "inet",
    protocol: "udp",
    stateCode: 7,
    sport: 40000,
    dport: 53,
    srcWords: [0x7f000001],
    dstWords: [0x7f000001],
    rqueue: 2 ** 31,
    wqueue: 2 ** 32 - 1,
    cookie: 1n,
    inode: 1,
  });
  const [header, row] = renderTable([freed], { display, header: true, netnsColumn: false })
    .toString()
    .split("\n");
  assert.deepEqual(row!.trim().split(/ +/).slice(2, 4), ["-2147483648", "-1"]);
  assert.equal(
    row!.indexOf("-1 ") + 2,
    header!.indexOf("Send-Q") + "Send-Q".length,
    "right-aligned under its header",
  );
});

test("each row shows its own socket's cells, aligned as ss aligns them", () => {
  fc.assert(
    fc.property(repeatingInetSockets, fc.boolean(), (sockets, netnsColumn) => {
      const text = renderTable(sockets, { display, header: true, netnsColumn }).toString();
      const [header, ...rows] = text.split("\n");
      assert.equal(rows.pop(), "");
      assert.equal(rows.length, sockets.length);
      // Recv-Q, Send-Q and the local address end where their header ends; the peer starts where its header does.
      const localEnd = header!.indexOf("Local Address:Port") + "Local Address:Port".length;
      rows.forEach((row, i) => {
        const s = sockets[i]!;
        const expected = [
          ...(netnsColumn ? [s.netns?.label ?? "(host)"] : []),
          s.protocol,
          LABELS[s.state],
          String(s.rqueue | 0),
          String(s.wqueue | 0),
          endpoint(s, s.src, s.sport),
          endpoint(s, s.dst, s.dport),
        ];
        assert.deepEqual(row.trim().split(/ +/), expected);
        const local = expected.at(-2)!;
        assert.equal(row.indexOf(` ${local} `) + local.length + 1, localEnd, row);
        assert.equal(row.indexOf(expected.at(-1)!, localEnd), localEnd + 1, row);
      });
    }),
    { numRuns: 300 },
  );
});

/** The table as a plain reference writer makes it: every cell padded to its column's widest. */
function referenceTable(
  sockets: InetSocket[],
  header: boolean,
  netnsColumn: boolean,
  extended: boolean,
): string {
  const titles = ["Netns", "Netid", "State", "Recv-Q", "Send-Q", "Local Address:Port", "Peer Address:Port"];
  const rows = sockets.map((s) => [
    s.netns?.label ?? "(host)",
    s.protocol,
    LABELS[s.state]!,
    String(s.rqueue),
    String(s.wqueue),
    endpoint(s, s.src, s.sport),
    endpoint(s, s.dst, s.dport),
  ]);
  const first = netnsColumn ? 0 : 1;
  // Columns are as wide as their titles with or without the header line (-H drops only that line).
  const widths = titles.map((t, c) => Math.max(t.length, ...rows.map((r) => r[c]!.length)));
  const line = (cells: string[], details: string) =>
    `${cells
      .slice(first)
      .map((text, i) => {
        const c = i + first;
        if (c === 6) return details ? text.padEnd(widths[c]!) : text;
        return c >= 3 ? text.padStart(widths[c]!) : text.padEnd(widths[c]!);
      })
      .join(" ")}${details}`.trimEnd();
  const lines = rows.map((r, i) => {
    const s = sockets[i]!;
    // Cookie 0 (a raw socket from /proc/net/raw) has no sk: to show.
    const sk = s.cookie === 0n ? "" : ` sk:${s.cookie.toString(16)}`;
    return line(r, extended ? ` uid:${s.uid} ino:${s.inode}${sk}` : "");
  });
  if (header) lines.unshift(line(titles, ""));
  return lines.length === 0 ? "" : `${lines.join("\n")}\n`;
}

test("rows written before a column grew are padded again to its final width", () => {
  fc.assert(
    fc.property(
      repeatingInetSockets,
      fc.boolean(),
      fc.boolean(),
      fc.boolean(),
      (sockets, header, netnsColumn, extended) => {
        const text = renderTable(sockets, {
          display: { ...display, extended },
          header,
          netnsColumn,
        }).toString();
        assert.equal(text, referenceTable(sockets, header, netnsColumn, extended));
      },
    ),
    { numRuns: 500 },
  );
});

test("30,000 rows, the last widening a column: every row is padded again to it", () => {
  const socket = (i: number, rqueue: number) =>
    socketFromWords({
      family: "inet",
      protocol: "udp",
      // Neighbours share their head, local host and peer: rows copy them from the previous one.
      stateCode: i < 20_000 ? 1 : 7,
      sport: 1024 + (i % 60000),
      dport: 53,
      srcWords: [0x7f000001 + Math.floor(i / 1000)],
      dstWords: [0x7f00000a],
      cookie: BigInt(i),
      inode: i,
      rqueue,
    });
  const sockets = Array.from({ length: 30_000 }, (_, i) => socket(i, i === 29_999 ? 12_345_678 : 0));
  for (const header of [true, false]) {
    const text = renderTable(sockets, { display, header, netnsColumn: false }).toString();
    assert.equal(text, referenceTable(sockets, header, false, false));
  }
});

test("a streamed table is written in batches, each padded to the widest cells so far, as ss renders", () => {
  // Rows of ~55 bytes: LISTING_BATCH_BYTES holds ~19,000; the wide Recv-Q comes in the second batch.
  const rows = Math.ceil((LISTING_BATCH_BYTES / 55) * 2.5);
  const widened = Math.ceil(rows * 0.6);
  const sockets = Array.from({ length: rows }, (_, i) =>
    socketFromWords({
      family: "inet",
      protocol: "udp",
      stateCode: 1,
      sport: 1024 + (i % 60000),
      dport: 53 + (i % 7),
      srcWords: [0x7f000001 + Math.floor(i / 1000)],
      dstWords: [0x7f00000a + (i % 13)],
      cookie: BigInt(i),
      inode: i,
      rqueue: i === widened ? 12_345_678 : 0,
    }),
  );
  for (const header of [true, false]) {
    const written: string[] = [];
    const batchEnds: number[] = [];
    const writer = new TableWriter({ display, header, netnsColumn: false }, (bytes) => {
      written.push(Buffer.from(bytes).toString());
    });
    sockets.forEach((s, i) => {
      const before = written.length;
      writer.add(s);
      if (written.length > before) batchEnds.push(i + 1);
    });
    const rest = writer.finish().map((b) => Buffer.from(b).toString());
    assert.ok(batchEnds.length >= 2, `${batchEnds.length} batches`);
    assert.ok(batchEnds[0]! <= widened, "the widening row is past the first batch");
    // Each batch's rows are the last rows of the whole table of every socket up to its end.
    const expected: string[] = [];
    let start = 0;
    for (const end of [...batchEnds, rows]) {
      const lines = referenceTable(sockets.slice(0, end), header, false, false).split("\n").slice(0, -1);
      if (start === 0 && header) expected.push(lines[0]!);
      expected.push(...lines.slice(lines.length - (end - start)));
      start = end;
    }
    assert.equal([...written, ...rest].join(""), `${expected.join("\n")}\n`);
    // The rows before the widening keep their narrower Recv-Q: the whole table would differ.
    assert.notEqual([...written, ...rest].join(""), referenceTable(sockets, header, false, false));
  }
});

test("cells with non-ASCII text are padded by their UTF-8 bytes, also in rows padded again after a column grew", () => {
  const sockets = ["/tmp/é.sock", "/run/ascii.sock", "@ñame", "/tmp/日本.sock", "/x"].map((name, i) => {
    const s = new UnixSocket("stream", 1, 100 + i, BigInt(i + 1));
    s.name = name;
    s.peer = 7;
    // The last row widens Recv-Q: every row before it is padded again.
    s.rqueue = i === 4 ? 12_345_678 : 0;
    return s;
  });
  const lines = renderTable(sockets, { display, header: true, netnsColumn: false })
    .toString()
    .trimEnd()
    .split("\n")
    .map((line) => Buffer.from(line));
  const header = lines[0]!.toString();
  const recvEnd = header.indexOf("Recv-Q") + "Recv-Q".length;
  const peerStart = header.indexOf("Peer Address:Port");
  for (const [i, line] of lines.slice(1).entries()) {
    const text = line.toString();
    assert.equal(line.indexOf(`* 7`), peerStart, `row ${i}: ${text}`);
    const rq = String(sockets[i]!.rqueue);
    assert.equal(line.indexOf(` ${rq} `, 5) + 1 + rq.length, recvEnd, `row ${i}: ${text}`);
    assert.ok(text.includes(`${sockets[i]!.name} ${sockets[i]!.inode}`), text);
  }
});
