/**
 * The one-pass tests' socket holders: a python process in a scratch namespace holding UDP sockets
 * of given kinds toward a backend (V4:PORT) — connected to it over IPv4, IPv6 or v4-mapped IPv6, to
 * another port, bound on its port, never bound, held twice, or in flight in SCM_RIGHTS (no task
 * holds it) — and asked afterwards each socket's SO_ERROR.
 */
import assert from "node:assert/strict";
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { createInterface, type Interface } from "node:readline";
import type { ScratchNetns } from "../kit/index.js";

/** The backend's port (one per test process) and address. */
export const PORT = 20000 + ((process.pid + 13) % 20000);
export const V4 = "127.0.0.81";
export const ECONNABORTED = 103;

const PYTHON = `
import array, json, os, sys
from socket import *
V4, PORT = sys.argv[1], int(sys.argv[2])
held = []
for kind in sys.argv[3:]:
    if kind == "flight":
        u = socket(AF_INET, SOCK_DGRAM); u.connect((V4, PORT))
        a, b = socketpair(AF_UNIX, SOCK_DGRAM)
        a.sendmsg([b"x"], [(SOL_SOCKET, SCM_RIGHTS, array.array("i", [u.fileno()]))])
        u.close()
        held.append((kind, b, a))
        continue
    if kind == "listener":
        s = socket(AF_INET, SOCK_DGRAM); s.bind((V4, PORT))
    elif kind == "unbound":
        s = socket(AF_INET, SOCK_DGRAM)
    elif kind == "dup":
        s = socket(AF_INET, SOCK_DGRAM); s.connect((V4, PORT + 1))
        held.append((kind, s, socket(fileno=os.dup(s.fileno()))))
        continue
    else:
        family, address, port = {"v4": (AF_INET, V4, PORT), "v4m": (AF_INET6, "::ffff:" + V4, PORT),
            "v6": (AF_INET6, "::1", PORT), "other": (AF_INET, V4, PORT + 1)}[kind]
        s = socket(family, SOCK_DGRAM); s.connect((address, port))
    held.append((kind, s, None))
print("ready", flush=True)
for line in sys.stdin:
    out = []
    for kind, s, _ in held:
        if kind == "flight":
            msg, anc, flags, addr = s.recvmsg(1, CMSG_LEN(4))
            fd = array.array("i", anc[0][2])[0]
            s = fromfd(fd, AF_INET, SOCK_DGRAM)
        out.append([kind, s.getsockopt(SOL_SOCKET, SO_ERROR)])
    print(json.dumps(out), flush=True)
    break
`;

/** A holder process; the caller kills `child`. */
export interface Held {
  child: ChildProcess;
  lines: Interface;
}

/** A python process in `ns` holding one socket of each of `kinds`, once it holds them. */
export async function holdIn(ns: ScratchNetns, kinds: string[]): Promise<Held> {
  const child = spawn("ip", ["netns", "exec", ns.name, "python3", "-c", PYTHON, V4, String(PORT), ...kinds], {
    stdio: ["pipe", "pipe", "inherit"],
  });
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream });
  const [line] = (await once(lines, "line")) as [string];
  assert.equal(line, "ready");
  return { child, lines };
}

/** Each held socket's kind and SO_ERROR (the in-flight one received first); once per holder. */
export async function errorsOf(held: Held): Promise<[string, number][]> {
  held.child.stdin?.write("check\n");
  const [line] = (await once(held.lines, "line")) as [string];
  return JSON.parse(line) as [string, number][];
}
