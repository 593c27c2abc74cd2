/**
 * The table writer on runs of sockets whose neighbours share some fields: every row holds that
 * socket's own cells, in columns as wide as their widest cell, whatever the previous row held.
 */
import assert from "node:assert/strict";
import { test } from "node:test";
import fc from "fast-check";
import { renderTable } from "../../src/cli/table.js";
import type { InetSocket } from "../../src/diag/socket.js";
import { repeatingInetSockets } from "./repeating-sockets.js";

const display = { options: false, extended: false, memory: false, info: false, processes: false };
const LABELS: Record<string, string> = { close: "UNCONN", established: "ESTAB" };

function endpoint(s: InetSocket, host: string, port: number): string {
  return `${s.family === "inet" ? host : `[${host}]`}:${port === 0 ? "*" : port}`;
}

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
          String(s.rqueue),
          String(s.wqueue),
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
