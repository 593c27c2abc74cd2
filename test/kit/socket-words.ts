/**
 * Sockets for unit tests, described the way the kernel sends them: address words and a state
 * number rather than texts and names.
 */
import { formatIPv4, formatIPv6 } from "../../src/diag/address.js";
import { InetSocket, type InetSocketInit } from "../../src/diag/socket.js";
import { stateName } from "../../src/diag/states.js";

export interface SocketWords extends Omit<InetSocketInit, "src" | "dst" | "state"> {
  /** idiag_state; 0 when absent. */
  stateCode?: number;
  /** idiag_src / idiag_dst as big-endian words (IPv4: the first; missing words are 0). */
  srcWords: readonly number[];
  dstWords: readonly number[];
}

/** The InetSocket a dump would make of these words. */
export function socketFromWords(init: SocketWords): InetSocket {
  const { stateCode = 0, srcWords, dstWords, ...rest } = init;
  return InetSocket.build({
    ...rest,
    state: stateName(stateCode),
    src: addressOf(srcWords, init.family === "inet6"),
    dst: addressOf(dstWords, init.family === "inet6"),
  });
}

function addressOf(words: readonly number[], v6: boolean): string {
  const w = [0, 1, 2, 3].map((i) => (words[i] ?? 0) >>> 0) as [number, number, number, number];
  return v6 ? formatIPv6(...w) : formatIPv4(w[0]);
}
