/** Random InetSockets for property tests: every fixed field of struct inet_diag_msg set at random. */
import fc from "fast-check";
import { InetSocket } from "../../src/diag/socket.js";

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const u16 = fc.integer({ min: 0, max: 0xffff });

type Words = [number, number, number, number];
const addressWords: fc.Arbitrary<Words> = fc.tuple(
  fc.oneof(fc.constant(0), u32),
  fc.oneof(fc.constant(0), u32),
  fc.oneof(fc.constant(0), fc.constant(0xffff), u32),
  u32,
);

/** An InetSocket with random family, protocol, state, ports, addresses, cookie, counters and label. */
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
    netns: fc.option(fc.string(), { nil: undefined }),
  })
  .map((r) => {
    const s = new InetSocket();
    s.family = r.family;
    s.protocol = r.protocol;
    s.stateCode = r.state;
    [s.sport, s.dport] = r.ports;
    [s.src0, s.src1, s.src2, s.src3] = r.src;
    [s.dst0, s.dst1, s.dst2, s.dst3] = r.dst;
    [s.cookieLo, s.cookieHi] = r.cookie;
    [s.ifindex, s.inode, s.uid, s.rqueue, s.wqueue] = r.counters;
    s.netns = r.netns;
    return s;
  });
