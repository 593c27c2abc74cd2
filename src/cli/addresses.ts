/**
 * Address texts for output, IPv4 memoised: a listing of 100,000 sockets repeats a few addresses,
 * and formatting each again would be most of the cost of printing it.
 */
import { formatIPv4 } from "../diag/address.js";
import type { InetSocket } from "../diag/socket.js";

export class AddressTexts {
  private readonly v4 = new Map<number, string>();

  /** The local address as JSON prints it ("10.0.0.1", "::1"). */
  src(s: InetSocket): string {
    return s.family === "inet" ? this.ipv4(s.src0) : s.src;
  }

  /** The remote address as JSON prints it. */
  dst(s: InetSocket): string {
    return s.family === "inet" ? this.ipv4(s.dst0) : s.dst;
  }

  /** The local host as ss's table prints it ("10.0.0.1", "[::1]"). */
  localHost(s: InetSocket): string {
    return s.family === "inet" ? this.ipv4(s.src0) : `[${s.src}]`;
  }

  /** The remote host as ss's table prints it. */
  peerHost(s: InetSocket): string {
    return s.family === "inet" ? this.ipv4(s.dst0) : `[${s.dst}]`;
  }

  private ipv4(word: number): string {
    let text = this.v4.get(word);
    if (text === undefined) {
      text = formatIPv4(word);
      if (this.v4.size < 65536) this.v4.set(word, text);
    }
    return text;
  }
}
