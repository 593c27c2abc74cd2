/**
 * probe() against this kernel, as root. The expected answers come from an independent source, the
 * kernel's own configuration (/proc/config.gz), when it is readable; otherwise from what this
 * project's reference kernel is known to have (tcp, udp, udplite, mptcp, unix, packet, netlink; no raw, sctp, vsock, tipc, xdp).
 */
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { release } from "node:os";
import { test } from "node:test";
import { gunzipSync } from "node:zlib";
import type { Protocol } from "../../src/diag/socket.js";
import { probe } from "../../src/sockets/index.js";
import { describeAsRoot } from "../kit/index.js";

/** The kernel option that builds each protocol's sock_diag handler (all of them, for sctp). */
const DIAG_OPTIONS: Readonly<Record<Protocol, readonly string[]>> = {
  tcp: ["CONFIG_INET_TCP_DIAG"],
  udp: ["CONFIG_INET_UDP_DIAG"],
  udplite: ["CONFIG_INET_UDP_DIAG"],
  raw: ["CONFIG_INET_RAW_DIAG"],
  mptcp: ["CONFIG_INET_MPTCP_DIAG"],
  sctp: ["CONFIG_IP_SCTP", "CONFIG_INET_SCTP_DIAG"],
  unix: ["CONFIG_UNIX_DIAG"],
  packet: ["CONFIG_PACKET_DIAG"],
  netlink: ["CONFIG_NETLINK_DIAG"],
  vsock: ["CONFIG_VSOCKETS", "CONFIG_VSOCKETS_DIAG"],
  tipc: ["CONFIG_TIPC", "CONFIG_TIPC_DIAG"],
  xdp: ["CONFIG_XDP_SOCKETS", "CONFIG_XDP_SOCKETS_DIAG"],
};

/** The reference kernel's answers, used when /proc/config.gz is not there. */
const REFERENCE: Readonly<Record<Protocol, boolean>> = {
  tcp: true,
  udp: true,
  udplite: true,
  raw: false,
  mptcp: true,
  sctp: false,
  unix: true,
  packet: true,
  netlink: true,
  vsock: false,
  tipc: false,
  xdp: false,
};

/**
 * Which protocols this kernel can list: true when every option is built in, false when one is not
 * set, undefined when one is a module (it may or may not load) or the config cannot be read.
 */
function expectedDiag(): Record<Protocol, boolean | undefined> {
  let config: string;
  try {
    config = gunzipSync(readFileSync("/proc/config.gz")).toString("utf8");
  } catch {
    return { ...REFERENCE };
  }
  const value = (option: string) => new RegExp(`^${option}=(.)`, "m").exec(config)?.[1] ?? "n";
  const out = {} as Record<Protocol, boolean | undefined>;
  for (const [protocol, options] of Object.entries(DIAG_OPTIONS) as [Protocol, string[]][]) {
    const values = options.map(value);
    out[protocol] = values.includes("n") ? false : values.includes("m") ? undefined : true;
  }
  return out;
}

describeAsRoot("probe", () => {
  test("lists per protocol as this kernel's configuration says; unsupported ones are named", () => {
    const result = probe();
    assert.equal(result.kernel, release());
    const expected = expectedDiag();
    for (const [protocol, ok] of Object.entries(expected) as [Protocol, boolean | undefined][]) {
      const item = result.diag[protocol];
      if (ok === undefined) continue;
      assert.equal(item.ok, ok, `${protocol}: ${item.detail}`);
      assert.match(item.detail, new RegExp(`\\b${protocol}\\b`), `the detail names ${protocol}`);
      if (!ok) assert.match(item.detail, /not supported by this kernel/);
    }
    // This project's kernel: the brief's "Done when" list, checked as well when the config agrees.
    for (const p of ["tcp", "udp", "udplite", "mptcp", "unix"] as const)
      if (expected[p]) assert.ok(result.diag[p].ok, p);
  });

  test("destroy works and is proven by the owner seeing ECONNABORTED; root holds both capabilities", () => {
    const result = probe();
    assert.deepEqual(result.destroy, {
      ok: true,
      detail: "SOCK_DESTROY works: the owner sees ECONNABORTED",
    });
    assert.deepEqual(result.capabilities, {
      netAdmin: { ok: true, detail: "CAP_NET_ADMIN held" },
      sysAdmin: { ok: true, detail: "CAP_SYS_ADMIN held" },
    });
    assert.equal(result.netns.enter.ok, true, result.netns.enter.detail);
    assert.equal(result.netns.create.ok, true, result.netns.create.detail);
  });

  test("probing twice gives the same answers and leaves no socket of its own behind", () => {
    const before = listOwnFds();
    assert.deepEqual(probe(), probe());
    assert.deepEqual(listOwnFds(), before);
  });
});

/** This process's open descriptors (a leaked probe socket or namespace handle would show here). */
function listOwnFds(): string[] {
  return readdirSync("/proc/self/fd").sort();
}
