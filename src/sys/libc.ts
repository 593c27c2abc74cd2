/**
 * The libc bindings, through koffi. This file is the only place in sockdiag that declares native
 * functions; everything above sys/ sees Buffers, numbers and SysError, never a pointer.
 */
import koffi from "./koffi.cjs";

const libc = koffi.load("libc.so.6");

// Buffers are passed as `void *`: koffi hands the native function the Buffer's own memory, so
// reads land in the caller's (reused) buffer without a copy.
export const native = {
  socket: libc.func("int socket(int domain, int type, int protocol)"),
  socketpair: libc.func("int socketpair(int domain, int type, int protocol, _Out_ int *sv)"),
  bind: libc.func("int bind(int fd, const void *addr, uint32_t len)"),
  connect: libc.func("int connect(int fd, const void *addr, uint32_t len)"),
  listen: libc.func("int listen(int fd, int backlog)"),
  accept4: libc.func("int accept4(int fd, void *addr, void *len, int flags)"),
  getsockname: libc.func("int getsockname(int fd, void *addr, _Inout_ uint32_t *len)"),
  sendto: libc.func(
    "intptr_t sendto(int fd, const void *buf, size_t len, int flags, const void *addr, uint32_t alen)",
  ),
  recvfrom: libc.func(
    "intptr_t recvfrom(int fd, void *buf, size_t len, int flags, void *addr, _Inout_ uint32_t *alen)",
  ),
  recv: libc.func("intptr_t recv(int fd, void *buf, size_t len, int flags)"),
  setsockopt: libc.func("int setsockopt(int fd, int level, int name, const void *val, uint32_t len)"),
  getsockopt: libc.func("int getsockopt(int fd, int level, int name, void *val, _Inout_ uint32_t *len)"),
  shutdown: libc.func("int shutdown(int fd, int how)"),
  close: libc.func("int close(int fd)"),
  poll: libc.func("int poll(void *fds, unsigned long nfds, int timeout)"),
  setns: libc.func("int setns(int fd, int nstype)"),
  unshare: libc.func("int unshare(int flags)"),
  mount: libc.func(
    "int mount(const char *source, const char *target, const char *fstype, unsigned long flags, const void *data)",
  ),
  umount2: libc.func("int umount2(const char *target, int flags)"),
  gettid: libc.func("int gettid()"),
  // syscall(2) is variadic; declared with bpf(2)'s three arguments, passed in the same registers.
  bpf: libc.func("long syscall(long nr, int cmd, void *attr, unsigned int size)"),
  pidfdOpen: libc.func("long syscall(long nr, int pid, unsigned int flags)"),
  pidfdGetfd: libc.func("long syscall(long nr, int pidfd, int targetfd, unsigned int flags)"),
  if_nametoindex: libc.func("unsigned int if_nametoindex(const char *name)"),
  mmap: libc.func("void *mmap(void *addr, size_t len, int prot, int flags, int fd, intptr_t offset)"),
  isatty: libc.func("int isatty(int fd)"),
  // ioctl is variadic; declared with one integer argument, which the x86-64 and arm64 calling
  // conventions pass the same way, because koffi's variadic calls cost ~100 us each.
  ioctl: libc.func("int ioctl(int fd, unsigned long request, unsigned long arg)"),
  // The same call for the requests that take a struct (struct ifreq): a separate declaration.
  ioctlBuffer: libc.func("int ioctl(int fd, unsigned long request, void *arg)"),
};

/** errno returns the calling thread's errno, read right after a failed call. */
export function errno(): number {
  return koffi.errno();
}
