/**
 * Socket timers as ss -o prints them: `timer:(NAME,EXPIRES,RETRANS)` from inet_diag_msg's
 * idiag_timer, idiag_expires (ms) and idiag_retrans — the names and the time format of ss's
 * tmr_name[] and print_ms_timer() (misc/ss.c).
 */
import type { InetSocket } from "../../diag/socket.js";

/** idiag_timer: 0 none, 1 retransmit, 2 keepalive (or FIN-WAIT-2), 3 TIME-WAIT, 4 zero-window probe. */
const TIMER_NAMES = ["off", "on", "keepalive", "timewait", "persist", "unknown"] as const;

export type TimerName = (typeof TIMER_NAMES)[number];

/** A socket's timer as data (ls -o -j). */
export interface Timer {
  name: TimerName;
  /** Milliseconds until it fires. */
  expiresMs: number;
  /** Retransmissions (or keepalive probes) so far. */
  retrans: number;
}

/** The timer of an inet socket; "unknown" for a code the kernel added after ss's table. */
export function timerOf(s: InetSocket): Timer {
  return {
    name: TIMER_NAMES[Math.min(s.timer, TIMER_NAMES.length - 1)]!,
    expiresMs: s.expires,
    retrans: s.retrans,
  };
}

/** ss's " timer:(...)" text, or "" for a socket without a running timer (ss prints nothing then). */
export function timerText(s: InetSocket): string {
  if (s.timer === 0) return "";
  const t = timerOf(s);
  return `timer:(${t.name},${msTimerText(t.expiresMs)},${t.retrans})`;
}

/**
 * Milliseconds as ss's print_ms_timer: minutes ("2min"), seconds ("43sec", "1.500ms" for 1.5 s),
 * milliseconds ("355ms"); digits past the two largest units are dropped.
 */
export function msTimerText(timeout: number): string {
  const ms = Math.max(0, Math.trunc(timeout));
  const minutes = Math.floor(ms / 60000);
  let secs = Math.floor(ms / 1000) % 60;
  let msecs = ms % 1000;
  let out = "";
  if (minutes) {
    msecs = 0;
    out += `${minutes}min`;
    if (minutes > 9) secs = 0;
  }
  if (secs) {
    if (secs > 9) msecs = 0;
    out += `${secs}${msecs ? "." : "sec"}`;
  }
  if (msecs) out += `${String(msecs).padStart(3, "0")}ms`;
  return out;
}
