/** Random InetSockets for property tests: every fixed field of struct inet_diag_msg set at random. */
import fc from "fast-check";
import type { InetSocket } from "../../src/diag/socket.js";
import { socketFromWords } from "../kit/socket-words.js";

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u16 = fc.integer({ min: 0, max: 0xffff });
const u8 = fc.integer({ min: 0, max: 0xff });

type Words = [number, number, number, number];
const addressWords: fc.Arbitrary<Words> = fc.tuple(
  fc.oneof(fc.constant(0), u32),
  fc.oneof(fc.constant(0), u32),
  fc.oneof(fc.constant(0), fc.constant(0xffff), u32),
  u32,
);

/** An InetSocket with every fixed field random: family, protocol, state, ports, addresses, cookie, counters, timer, label. */
export const arbitraryInetSocket: fc.Arbitrary<InetSocket> = fc
  .record({
    family: fc.constantFrom("inet" as const, "inet6" as const),
    protocol: fc.constantFrom("tcp" as const, "udp" as const, "udplite" as const, "mptcp" as const),
    state: fc.integer({ min: 0, max: 15 }),
    ports: fc.tuple(u16, u16),
    src: addressWords,
    dst: addressWords,
    cookie: fc.tuple(u32, u32),
    counters: fc.tuple(u32, u32, u32, u32, u32),
    timers: fc.tuple(u8, u8, u32),
    netns: fc.option(fc.string(), { nil: undefined }),
  })
  .map((r) => {
    const [ifindex, inode, uid, rqueue, wqueue] = r.counters;
    const [timer, retrans, expires] = r.timers;
    return socketFromWords({
      family: r.family,
      protocol: r.protocol,
      stateCode: r.state,
      sport: r.ports[0],
      dport: r.ports[1],
      srcWords: r.src,
      dstWords: r.dst,
      cookie: (BigInt(r.cookie[1]) << 32n) | BigInt(r.cookie[0]),
      ifindex,
      inode,
      uid,
      rqueue,
      wqueue,
      timer,
      retrans,
      expires,
      netns: r.netns === undefined ? undefined : { label: r.netns, dev: 4, ino: 4026531840 },
    });
  });
