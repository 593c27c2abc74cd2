/** Benchmark scenes: throwaway namespaces filled with UDP sockets by the test kit's holders. */
import { createNetns, Population, removeNetns, type ScratchNetns } from "../test/kit/index.js";

/** The installed command: the bundle package.json names as `bin`. */
export const CLI = new URL("../../src/cli/bin.cjs", import.meta.url).pathname;

/** A namespace with `total` UDP sockets, `targetCount` of them connected to target. */
export interface UdpScene {
  netns: ScratchNetns;
  population: Population;
  stop(): Promise<void>;
}

export async function udpScene(
  label: string,
  total: number,
  target: { address: string; port: number },
  targetCount: number,
): Promise<UdpScene> {
  const netns = await createNetns(label);
  try {
    const population = await Population.start({ netnsPath: netns.path, total, target, targetCount });
    return {
      netns,
      population,
      async stop() {
        await population.stop();
        await removeNetns(netns.name);
      },
    };
  } catch (err) {
    await removeNetns(netns.name);
    throw err;
  }
}
