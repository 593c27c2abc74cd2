/**
 * Many namespaces: listing the sockets of 200 small namespaces (10 UDP sockets each), per namespace,
 * next to a shell loop of `ss -N NAME` over the same 200.
 */
import { listSockets } from "../src/sockets/index.js";
import { manyNamespaces } from "./many.js";
import { fmt, row, timeFn, timeProcess } from "./measure.js";
import { CLI } from "./scene.js";

const COUNT = 200;
const PER_NAMESPACE = 10;

export async function benchNamespaces(): Promise<string[]> {
  const out = [`namespaces: ${COUNT} namespaces of ${PER_NAMESPACE} UDP sockets each`];
  const scene = await manyNamespaces("ns", COUNT, PER_NAMESPACE, 2, { address: "127.0.0.1", port: 5353 });
  try {
    let listed = 0;
    const lib = timeFn(() => {
      listed = 0;
      for (const name of scene.names) listed += listSockets({ netns: name, protocols: ["udp"] }).length;
    }, 3);
    const loop = `for n in ${scene.names.join(" ")}; do ss -N $n -uan; done`;
    const ss = timeProcess("bash", ["-c", loop], 3);
    out.push(
      row(
        `shell loop of ss -N NAME -uan (${COUNT} processes)`,
        fmt.ms(ss),
        `${(ss / COUNT).toFixed(2)} ms/netns`,
      ),
    );
    out.push(
      row(
        `listSockets per namespace, in-process (${listed} sockets)`,
        fmt.ms(lib),
        `${(lib / COUNT).toFixed(3)} ms/netns  ${fmt.ratio(lib, ss)} ss loop (goal <= 0.2)`,
      ),
    );
    const all = timeProcess(process.execPath, [CLI, "ls", "-u", "-a", "--all-netns"], 3);
    out.push(
      row(
        "sockdiag ls -u -a --all-netns (whole process, every netns)",
        fmt.ms(all),
        `${fmt.ratio(all, ss)} ss loop`,
      ),
    );
  } finally {
    await scene.stop();
  }
  return out;
}
