/**
 * State names and masks against iproute2's misc/ss.c (6.1, the ss on this machine): its SS_* enum,
 * SS_ALL, SS_CONN and scan_state(), transcribed below; and against include/net/tcp_states.h numbering.
 */
import assert from "node:assert/strict";
import { describe, test } from "node:test";
import {
  ALL_STATES,
  STATE_GROUPS,
  STATE_NAMES,
  stateMask,
  stateName,
  stateWords,
} from "../../src/diag/states.js";

// enum { SS_UNKNOWN, SS_ESTABLISHED, ..., SS_CLOSING, SS_MAX } in misc/ss.c; the same numbers as tcp_states.h.
const SS = {
  ESTABLISHED: 1,
  SYN_SENT: 2,
  SYN_RECV: 3,
  FIN_WAIT1: 4,
  FIN_WAIT2: 5,
  TIME_WAIT: 6,
  CLOSE: 7,
  CLOSE_WAIT: 8,
  LAST_ACK: 9,
  LISTEN: 10,
  CLOSING: 11,
  MAX: 12,
};
const TCP_NEW_SYN_RECV = 12;
const TCP_BOUND_INACTIVE = 13;
const b = (s: number) => 1 << s;

// #define SS_ALL ((1 << SS_MAX) - 1)
const SS_ALL = b(SS.MAX) - 1;
// scan_state(): the group words. Note that `connected` is NOT SS_CONN (all & ~(LISTEN|CLOSE|TIME_WAIT|SYN_RECV)),
// which is only ss's default state set when no -a/-l/state is given: `ss state connected` lists TIME-WAIT.
const SS_GROUPS: Record<string, number> = {
  all: SS_ALL,
  connected: SS_ALL & ~(b(SS.CLOSE) | b(SS.LISTEN)),
  synchronized: SS_ALL & ~(b(SS.CLOSE) | b(SS.LISTEN) | b(SS.SYN_SENT)),
  bucket: b(SS.SYN_RECV) | b(SS.TIME_WAIT),
  big: SS_ALL & ~(b(SS.SYN_RECV) | b(SS.TIME_WAIT)),
};
/** The states ss 6.1 knows, without SS_UNKNOWN (bit 0: no socket is ever in state 0). */
const SS_KNOWN = SS_ALL & ~1;

describe("state names", () => {
  test("numbered as include/net/tcp_states.h, named as ss's filter words", () => {
    assert.deepEqual(
      [...STATE_NAMES],
      [
        "unknown",
        "established",
        "syn-sent",
        "syn-recv",
        "fin-wait-1",
        "fin-wait-2",
        "time-wait",
        "close",
        "close-wait",
        "last-ack",
        "listening",
        "closing",
        "new-syn-recv",
        "bound-inactive",
      ],
    );
  });

  test("stateName: numbers past the table and 0 are unknown", () => {
    assert.equal(stateName(1), "established");
    assert.equal(stateName(13), "bound-inactive");
    assert.equal(stateName(0), "unknown");
    assert.equal(stateName(14), "unknown");
    assert.equal(stateName(255), "unknown");
  });
});

describe("state masks against ss", () => {
  test("ALL_STATES: every state ss knows, plus NEW_SYN_RECV and BOUND_INACTIVE, never bit 0", () => {
    assert.equal(ALL_STATES & SS_KNOWN, SS_KNOWN);
    assert.equal(ALL_STATES, SS_KNOWN | b(TCP_NEW_SYN_RECV) | b(TCP_BOUND_INACTIVE));
  });

  for (const [word, ssMask] of Object.entries(SS_GROUPS)) {
    test(`state ${word}: the states ss's scan_state() gives it`, () => {
      const mask = stateMask(word);
      assert.equal(STATE_GROUPS[word], mask);
      assert.ok(mask !== undefined);
      assert.equal((mask & SS_KNOWN).toString(2), (ssMask & SS_KNOWN).toString(2));
    });

    // inet_diag answers for NEW_SYN_RECV request sockets with idiag_state SYN_RECV and adds
    // TCPF_NEW_SYN_RECV itself to any mask holding TCPF_SYN_RECV: NEW_SYN_RECV alone would list
    // syn-recv sockets for a word that excludes them.
    test(`state ${word}: NEW_SYN_RECV only together with SYN_RECV`, () => {
      const mask = stateMask(word) ?? 0;
      if (mask & b(TCP_NEW_SYN_RECV)) assert.ok(mask & b(SS.SYN_RECV), "syn-recv sockets would be listed");
    });
  }

  test("every single state word ss's scan_state() accepts", () => {
    const words: [string, number][] = [
      ["established", SS.ESTABLISHED],
      ["syn-sent", SS.SYN_SENT],
      ["syn-recv", SS.SYN_RECV],
      ["syn-rcv", SS.SYN_RECV],
      ["fin-wait-1", SS.FIN_WAIT1],
      ["fin-wait-2", SS.FIN_WAIT2],
      ["time-wait", SS.TIME_WAIT],
      ["close", SS.CLOSE],
      ["closed", SS.CLOSE],
      ["unconnected", SS.CLOSE],
      ["close-wait", SS.CLOSE_WAIT],
      ["last-ack", SS.LAST_ACK],
      ["listening", SS.LISTEN],
      ["closing", SS.CLOSING],
    ];
    for (const [word, state] of words) assert.equal(stateMask(word), b(state), word);
  });

  test("ss compares state words without regard to case (strcasecmp)", () => {
    assert.equal(stateMask("ESTABLISHED"), b(SS.ESTABLISHED));
    assert.equal(stateMask("Connected"), stateMask("connected"));
  });

  test("an unknown word is undefined, not a mask", () => {
    for (const word of ["", "unknown", "estab", "listen-ing", "all "])
      assert.equal(stateMask(word), undefined, word);
  });

  test("stateWords lists only words stateMask accepts, each once", () => {
    const words = stateWords();
    assert.equal(new Set(words).size, words.length);
    for (const w of words) assert.notEqual(stateMask(w), undefined, w);
    for (const w of Object.keys(SS_GROUPS)) assert.ok(words.includes(w), w);
  });
});
