/**
 * Text from other users in a table — a unix socket's path, a process name (-p) — is escaped as
 * `ls -b` escapes a file name, so that it can neither forge a row nor drive the terminal; JSON
 * keeps the exact text, and a name that is not UTF-8 carries its bytes (nameBytes, base64). A
 * namespace pin name is escaped the same way.
 */
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { escapeText } from "../../src/cli/render/index.js";
import { AF_UNIX, bind, close, listen, SOCK_STREAM, socket } from "../../src/sys/index.js";
import { describeAsRoot } from "../kit/index.js";
import { type JsonSocket, sockdiag, sockdiagJson } from "./cli.js";

test("escapeText escapes as ls -b: C escapes, a doubled backslash, octal for the other controls", () => {
  const plain = "/run/app.sock é ✓";
  assert.equal(escapeText(plain), plain);
  assert.equal(escapeText("a\nb\tc\\d\re\x07\b\v\f"), "a\\nb\\tc\\\\d\\re\\a\\b\\v\\f");
  assert.equal(escapeText("\x1b[2J\x00\x7f"), "\\033[2J\\000\\177");
  assert.equal(escapeText("csi\u009b"), "csi\\302\\233");
});

/** A unix stream socket bound to raw `name` bytes (a path, or an abstract name from its NUL). */
function bindRaw(name: Buffer): number {
  const addr = Buffer.alloc(2 + name.length + (name[0] === 0 ? 0 : 1));
  addr.writeUInt16LE(AF_UNIX, 0);
  name.copy(addr, 2);
  const fd = socket(AF_UNIX, SOCK_STREAM, 0);
  bind(fd, addr);
  listen(fd, 1);
  return fd;
}

/** A forged row: what a path holding it would print after its newline, unescaped. */
const FAKE_ROW = "udp   ESTAB 0  0  6.6.6.6:53  10.0.0.1:5353";
/** A process name with a terminal escape, a bell, a newline and a backslash (15 bytes). */
const COMM = "ev\x1b]0;x\x07\nudp b\\";

let dir: string;
let forged: string;
let backslashed: string;
let invalid: Buffer;
let abstract: Buffer;
const servers: Server[] = [];
const fds: number[] = [];
let holder: ReturnType<typeof spawn>;
let held: string;

before(async () => {
  dir = mkdtempSync(join(tmpdir(), "sdt-esc-"));
  forged = join(dir, `a\n${FAKE_ROW}`);
  backslashed = join(dir, "b\\c\td");
  for (const path of [forged, backslashed]) {
    const server = createServer().listen(path);
    await once(server, "listening");
    servers.push(server);
  }
  invalid = Buffer.concat([Buffer.from(join(dir, "bad-")), Buffer.from([0xff, 0xfe, 0x41])]);
  abstract = Buffer.from(`\0sdt-esc-${process.pid}\0\x1b[2J`);
  fds.push(bindRaw(invalid), bindRaw(abstract));
  // A process that names itself COMM and holds a listening socket at `held`.
  held = join(dir, "held");
  const script = `require("node:fs").writeFileSync("/proc/self/comm", ${JSON.stringify(COMM)});
    require("node:net").createServer().listen(${JSON.stringify(held)}, () => process.stdout.write("ready\\n"));
    process.stdin.on("end", () => process.exit(0)).resume();`;
  holder = spawn(process.execPath, ["-e", script], { stdio: ["pipe", "pipe", "inherit"] });
  await once(holder.stdout!, "data");
});

after(() => {
  holder?.stdin?.end();
  for (const server of servers) server.close();
  for (const fd of fds) close(fd);
  rmSync(dir, { recursive: true, force: true });
});

/** The listing's socket named `name`, exactly. */
function named(sockets: JsonSocket[], name: string): JsonSocket & { nameBytes?: string } {
  const found = sockets.find((s) => s.name === name);
  assert.ok(found, `a socket named ${JSON.stringify(name)}`);
  return found;
}

test("a unix path or process name cannot forge a row or reach the terminal in the table; JSON keeps it exact", async () => {
  const sockets = await sockdiagJson(["ls", "-x", "-l", "-p"]);
  const table = await sockdiag(["ls", "-x", "-l", "-p"]);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.split("\n");
  assert.deepEqual(
    lines.filter((l) => l.startsWith("udp") || l.includes("\x1b")),
    [],
    "no forged row, no escape byte",
  );
  const row = (s: JsonSocket) => lines.find((l) => new RegExp(` ${s.inode} +\\* `).test(l)) ?? "";

  const a = named(sockets, forged);
  assert.equal(a.nameBytes, undefined);
  assert.ok(row(a).includes(`${dir}/a\\n${FAKE_ROW} ${a.inode}`), row(a));

  const b = named(sockets, backslashed);
  assert.ok(row(b).includes(`${dir}/b\\\\c\\td ${b.inode}`), row(b));

  const bad = named(sockets, `${dir}/bad-\uFFFD\uFFFDA`);
  assert.deepEqual(Buffer.from(bad.nameBytes ?? "", "base64"), invalid);
  assert.ok(row(bad).includes(`${dir}/bad-\uFFFD\uFFFDA ${bad.inode}`), row(bad));

  const abs = named(sockets, `@sdt-esc-${process.pid}@\x1b[2J`);
  assert.deepEqual(Buffer.from(abs.nameBytes ?? "", "base64"), abstract);
  assert.ok(row(abs).includes(`@sdt-esc-${process.pid}@\\033[2J ${abs.inode}`), row(abs));

  const h = named(sockets, held);
  assert.deepEqual(
    h.owners?.map((o) => [o.pid, o.command]),
    [[holder.pid, COMM]],
  );
  assert.ok(row(h).includes(`users:(("ev\\033]0;x\\a\\nudp b\\\\",pid=${holder.pid},`), row(h));
});

describeAsRoot("pin names in tables", () => {
  /** A pin name with a newline, a made-up row and a terminal escape. */
  const PIN = "pin\n(host)  forged\x1b[2J";
  let pins: string;

  before(() => {
    pins = mkdtempSync(join(tmpdir(), "sdt-esc-pins-"));
    writeFileSync(join(pins, PIN), "");
    execFileSync("unshare", [`--net=${join(pins, PIN)}`, "true"]);
  });
  after(() => {
    spawnSync("umount", [join(pins, PIN)]);
    rmSync(pins, { recursive: true, force: true });
  });

  test("a pin name is escaped in netns ls and in ls's Netns column; JSON keeps it exact", async () => {
    const escaped = "pin\\n(host)  forged\\033[2J";
    const json = await sockdiag(["netns", "ls", "--netns-dir", pins, "-j"]);
    assert.equal(json.code, 0, json.stderr);
    const rows = JSON.parse(json.stdout) as { name: string | null }[];
    assert.ok(
      rows.some((r) => r.name === PIN),
      json.stdout,
    );
    for (const args of [
      ["netns", "ls", "--netns-dir", pins],
      // The kernel keeps netlink sockets of its own in every namespace.
      ["ls", "-a", "-A", "netlink", "--all-netns", "--no-discover", "--netns-dir", pins],
    ]) {
      const table = await sockdiag(args);
      assert.equal(table.code, 0, table.stderr);
      const lines = table.stdout.split("\n");
      assert.deepEqual(
        lines.filter((l) => l.startsWith("(host)  forged") || l.includes("\x1b")),
        [],
        `${args.join(" ")}: no forged row, no escape byte`,
      );
      assert.ok(
        lines.some((l) => l.startsWith(escaped)),
        `${args.join(" ")}:\n${table.stdout}`,
      );
    }
  });
});
