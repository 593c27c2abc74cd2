/**
 * Pinned namespaces: a namespace kept alive by a bind mount of its nsfs file onto an empty file in a
 * pin directory, named by that file's name. Compatible with `ip netns` (iproute2 ip/ipnetns.c):
 * the same directory, the same shared mount, the same file, so each tool sees and removes the
 * other's namespaces.
 */
import { closeSync, constants, mkdirSync, openSync, unlinkSync } from "node:fs";
import { Errno, SysError } from "../sys/errors.js";
import { MNT_DETACH, MS_BIND, MS_REC, MS_SHARED, mount, umount2 } from "../sys/index.js";
import { type CreateOptions, create } from "./create.js";
import { threadNetns } from "./enter.js";
import {
  fsError,
  InvalidNetnsNameError,
  NetnsError,
  NetnsExistsError,
  NetnsNotFoundError,
} from "./errors.js";
import { NetNS } from "./handle.js";

/** The directory `ip netns` pins namespaces in (/var/run/netns is the same: /var/run -> /run). */
export const NETNS_RUN_DIR = "/run/netns";

/**
 * The pin directories a walk over every namespace searches unless told others, each where it
 * exists: ip netns's, then Cilium's and Docker's.
 */
export const DEFAULT_NETNS_DIRS: readonly string[] = [
  NETNS_RUN_DIR,
  "/var/run/cilium/netns",
  "/var/run/docker/netns",
];

/** Where a pinned name lives. */
export interface PinOptions {
  /** The pin directory. Default NETNS_RUN_DIR. */
  dir?: string;
}

// NAME_MAX from linux/limits.h: the longest file name.
const NAME_MAX = 255;

/**
 * validateNetnsName throws InvalidNetnsNameError unless `name` can only mean one file inside the pin
 * directory: not empty, no "/", no NUL, not "." or "..", at most NAME_MAX bytes. The same rule as
 * iproute2's is_valid_netns_name(), plus NUL (which would cut the C string short) and U+FFFD, the
 * replacement character: Node decodes invalid UTF-8 (an argv word `adv-\xff`) to it, so a name
 * holding one most likely did not survive decoding and would open another namespace.
 */
export function validateNetnsName(name: string): void {
  const why = invalidity(name);
  if (why) throw new InvalidNetnsNameError(String(name), `invalid namespace name: it ${why}`);
}

function invalidity(name: string): string | undefined {
  if (typeof name !== "string") return "is not a string";
  if (name === "") return "is empty";
  if (name.includes("/")) return 'contains "/"';
  if (name.includes("\0")) return "contains a NUL byte";
  if (name.includes("\uFFFD"))
    return "contains U+FFFD, the mark of bytes that are not valid UTF-8 (the name cannot be given exactly)";
  if (name === "." || name === "..") return "is a directory reference";
  if (Buffer.byteLength(name) > NAME_MAX) return `is longer than ${NAME_MAX} bytes`;
  return undefined;
}

function pinPath(name: string, options: PinOptions): string {
  validateNetnsName(name);
  threadNetns.assertUsable();
  return `${options.dir ?? NETNS_RUN_DIR}/${name}`;
}

/**
 * fromName opens the namespace pinned as `name` (/run/netns/NAME, or in options.dir). The caller owns
 * the handle. Throws InvalidNetnsNameError, NetnsNotFoundError, NotANetnsError, NetnsError.
 */
export function fromName(name: string, options: PinOptions = {}): NetNS {
  return NetNS.open(pinPath(name, options), name);
}

/**
 * add creates a new namespace and pins it as `name`, as `ip netns add NAME` does, and returns a
 * handle of it (the caller owns the handle; the pin keeps the namespace alive until remove()).
 * Needs CAP_SYS_ADMIN. Throws InvalidNetnsNameError, NetnsExistsError, NetnsError,
 * NetnsRestoreError (fatal). On failure nothing is left behind but the shared pin directory.
 */
export function add(name: string, options: PinOptions & CreateOptions = {}): NetNS {
  const path = pinPath(name, options);
  const dir = options.dir ?? NETNS_RUN_DIR;
  makeSharedDir(dir);
  try {
    closeSync(openSync(path, constants.O_RDONLY | constants.O_CREAT | constants.O_EXCL, 0));
  } catch (err) {
    const e = fsError(name, `cannot create ${path}`, err);
    throw e.cause?.code === "EEXIST" ? new NetnsExistsError(name, `already exists (${path})`, e.cause) : e;
  }
  try {
    using ns = create(options);
    // mount(2) follows the /proc/self/fd magic link to the nsfs file, as `mount --bind` does.
    mount(`/proc/self/fd/${ns.fd}`, path, "none", MS_BIND);
    return NetNS.open(path, name);
  } catch (err) {
    unpin(path);
    if (err instanceof SysError) throw new NetnsError(name, `cannot pin at ${path}`, err);
    throw err;
  }
}

/**
 * remove unpins `name` as `ip netns del NAME` does: detach the bind mount, delete the file. The
 * namespace itself lives on while a process or a handle holds it. Works on pins made by `ip netns
 * add` too. Needs CAP_SYS_ADMIN. Throws InvalidNetnsNameError, NetnsNotFoundError, NetnsError.
 */
export function remove(name: string, options: PinOptions = {}): void {
  const path = pinPath(name, options);
  try {
    umount2(path, MNT_DETACH);
  } catch (err) {
    const e = err as SysError;
    if (e.errno === Errno.ENOENT) throw new NetnsNotFoundError(name, `no pin at ${path}`, e);
    // EINVAL: not a mount point, e.g. a file left by a half-done `ip netns add`; delete it anyway.
    if (e.errno !== Errno.EINVAL) throw new NetnsError(name, `cannot unmount ${path}`, e);
  }
  try {
    unlinkSync(path);
  } catch (err) {
    throw fsError(name, `cannot delete ${path}`, err);
  }
}

/**
 * makeSharedDir makes `dir` a shared mount (MS_SHARED|MS_REC) so pins made inside it propagate to
 * every mount namespace that shares it, as ip/ipnetns.c does: if `dir` is not yet a mount point
 * (EINVAL), bind-mount it onto itself first, then retry.
 */
function makeSharedDir(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
    try {
      mount("", dir, "none", MS_SHARED | MS_REC);
    } catch (err) {
      if ((err as SysError).errno !== Errno.EINVAL) throw err;
      mount(dir, dir, "none", MS_BIND | MS_REC);
      mount("", dir, "none", MS_SHARED | MS_REC);
    }
  } catch (err) {
    throw fsError(dir, "cannot make the pin directory a shared mount", err);
  }
}

/** Undo a half-made pin: detach whatever got mounted, delete the file. Best effort, for cleanup only. */
function unpin(path: string): void {
  try {
    umount2(path, MNT_DETACH);
  } catch {
    // Not mounted: nothing to detach.
  }
  try {
    unlinkSync(path);
  } catch {
    // Already gone.
  }
}
