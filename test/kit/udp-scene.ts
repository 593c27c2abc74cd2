/**
 * A small destroy scene: one throwaway namespace, one holder in it, and a UDP receiver bound to
 * 127.0.0.1 that clients connect to. Clients talk to a bound socket, so a send never draws an ICMP
 * error that a later recv would report in place of ECONNABORTED.
 */
import { Holder } from "./holder.js";
import type { HeldSocket } from "./holder-protocol.js";
import { cleanupLeftovers, createNetns, type ScratchNetns } from "./netns.js";

export interface UdpScene {
  ns: ScratchNetns;
  holder: Holder;
  receiver: HeldSocket;
  /** Open `n` UDP sockets connected to the receiver. */
  clients(n: number): Promise<HeldSocket[]>;
  /** Stop the holder and remove the namespace. */
  stop(): Promise<void>;
}

export async function startUdpScene(label: string): Promise<UdpScene> {
  await cleanupLeftovers();
  const ns = await createNetns(label);
  let holder: Holder | undefined;
  try {
    holder = await Holder.start({ netnsPath: ns.path });
    const [receiver] = (await holder.open({ kind: "udp", bind: { address: "127.0.0.1" } })) as [HeldSocket];
    const held = holder;
    return {
      ns,
      holder: held,
      receiver,
      clients: (n) => held.open({ kind: "udp", connect: { address: "127.0.0.1", port: receiver.sport } }, n),
      async stop() {
        await held.stop();
        await ns.remove();
      },
    };
  } catch (err) {
    await holder?.stop();
    await ns.remove();
    throw err;
  }
}
