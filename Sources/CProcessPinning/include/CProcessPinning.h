#ifndef KEYWELL_CPROCESSPINNING_H
#define KEYWELL_CPROCESSPINNING_H

#include <sys/types.h>

/* Thin wrappers over Linux system calls that Swift cannot reach directly (variadic syscall(),
   or no glibc wrapper in Debian 12). Each returns -1 and sets errno on failure. */

/* A pidfd for `pid` (O_CLOEXEC). */
int keywell_pidfd_open(pid_t pid);

/* 0 when the process `pidfd` refers to is still alive (signal 0 checks without sending). */
int keywell_pidfd_is_alive(int pidfd);

/* Opens `path` below the directory `root_fd` as if `root_fd` were "/" (openat2 RESOLVE_IN_ROOT
   | RESOLVE_NO_MAGICLINKS): absolute paths, ".." and symlinks cannot leave it. O_RDONLY |
   O_CLOEXEC | O_NOCTTY | `extra_flags`. */
int keywell_open_in_root(int root_fd, const char *path, int extra_flags);

/* What the kernel's socket diagnostics (NETLINK_SOCK_DIAG) say of the Unix socket whose inode is
   `inode`: the inode of the socket at its other end (0 when it has none) in `*peer_inode`, and,
   when `name` is not NULL, the address it is bound to — for an accepted socket, its listener's —
   in `name` (at most `name_size` bytes; `*name_length` 0 when unbound; an abstract name starts
   with a NUL byte). */
int keywell_unix_socket_info(unsigned int inode, unsigned int *peer_inode, char *name, size_t name_size,
                             size_t *name_length);

#endif
