/**
 * findSocketOwners against this process's own descriptors (no root needed): the whole proc root,
 * or only the processes asked for (`pids`).
 */
import assert from "node:assert/strict";
import { createSocket } from "node:dgram";
import { once } from "node:events";
import { readdirSync, readlinkSync } from "node:fs";
import { test } from "node:test";
import { findSocketOwners } from "../../src/sockets/index.js";

/** The inodes of this process's sockets, as its descriptors link to them. */
function ownInodes(): Set<number> {
  const inodes = new Set<number>();
  for (const fd of readdirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/self/fd/${fd}`));
      if (m) inodes.add(Number(m[1]));
    } catch {
      // The directory's own descriptor, closed by now.
    }
  }
  return inodes;
}

test("pids: only the processes asked for are looked at", async () => {
  const socket = createSocket("udp4");
  socket.bind(0, "127.0.0.1");
  await once(socket, "listening");
  try {
    const mine = ownInodes();
    assert.ok(mine.size > 0);
    const all = findSocketOwners(mine);
    const asked = findSocketOwners(mine, "/proc", { pids: [process.pid] });
    assert.deepEqual([...asked.keys()].sort(), [...mine].sort());
    for (const owners of asked.values()) for (const o of owners) assert.equal(o.pid, process.pid);
    assert.deepEqual(
      [...asked].map(([inode, owners]) => [inode, owners.filter((o) => o.pid === process.pid)]),
      [...asked].map(([inode]) => [inode, (all.get(inode) ?? []).filter((o) => o.pid === process.pid)]),
    );
    assert.equal(findSocketOwners(mine, "/proc", { pids: [] }).size, 0);
  } finally {
    socket.close();
  }
});
