/**
 * Namespace and mount system calls. Only netns/ should call these: they move the calling thread
 * between network namespaces, which is safe only under the discipline netns/ enforces.
 */

import { SysError } from "./errors.js";
import { errno, native } from "./libc.js";

export const CLONE_NEWNET = 0x40000000;
export const MS_BIND = 4096;
export const MS_REC = 16384;
export const MS_SHARED = 1 << 20;
export const MNT_DETACH = 2;

/** setns(2): move the calling thread into the namespace open on `fd`. */
export function setns(fd: number, nstype: number): void {
  if (native.setns(fd, nstype) < 0) throw new SysError("setns", errno());
}

/** unshare(2): give the calling thread new namespaces of the kinds in `flags`. */
export function unshare(flags: number): void {
  if (native.unshare(flags) < 0) throw new SysError("unshare", errno());
}

/** mount(2). */
export function mount(source: string, target: string, fstype: string | null, flags: number): void {
  if (native.mount(source, target, fstype, flags, null) < 0) throw new SysError("mount", errno(), target);
}

/** umount2(2). */
export function umount2(target: string, flags: number): void {
  if (native.umount2(target, flags) < 0) throw new SysError("umount2", errno(), target);
}

/** gettid(2): the calling thread's id, to name /proc/<pid>/task/<tid>/ns/net. */
export function gettid(): number {
  return native.gettid();
}
