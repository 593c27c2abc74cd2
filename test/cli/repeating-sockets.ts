/**
 * Runs of inet sockets whose fields come from pools of two values, so that neighbours share some
 * fields and differ in others, as the sockets of one dump do: what the writers' repeated-span
 * copies must get right.
 */
import fc from "fast-check";
import type { InetSocket } from "../../src/diag/socket.js";
import { socketFromWords } from "../kit/socket-words.js";

const two = <T>(a: T, b: T) => fc.constantFrom(a, b);

export const repeatingInetSockets: fc.Arbitrary<InetSocket[]> = fc.array(
  fc
    .record({
      family: two("inet" as const, "inet6" as const),
      protocol: two("udp" as const, "tcp" as const),
      stateCode: two(7, 1),
      sport: two(0, 1024),
      dport: two(0, 5353),
      src: two(0x7f000001, 0x7f000a01),
      dst: two(0, 0x7f00000a),
      netns: two(undefined, "blue"),
      rqueue: two(0, 213),
      wqueue: two(0, 7),
      uid: two(0, 1000),
      inode: fc.integer({ min: 0, max: 0xffffffff }),
    })
    .map((r) =>
      socketFromWords({
        family: r.family,
        protocol: r.protocol,
        stateCode: r.stateCode,
        sport: r.sport,
        dport: r.dport,
        srcWords: r.family === "inet" ? [r.src] : [0, 0, 0xffff, r.src],
        dstWords: r.family === "inet" ? [r.dst] : [0, 0, 0xffff, r.dst],
        cookie: BigInt(r.inode) * 3n,
        inode: r.inode,
        uid: r.uid,
        rqueue: r.rqueue,
        wqueue: r.wqueue,
        netns: r.netns === undefined ? undefined : { label: r.netns, dev: 4, ino: 4026531841 },
      }),
    ),
  { maxLength: 30 },
);
