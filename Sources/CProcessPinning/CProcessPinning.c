#define _GNU_SOURCE
#include "CProcessPinning.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_pidfd_open
#define SYS_pidfd_open 434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal 424
#endif
#ifndef SYS_openat2
#define SYS_openat2 437
#endif

int keywell_pidfd_open(pid_t pid) {
    /* pidfds are close-on-exec by default. */
    return (int)syscall(SYS_pidfd_open, pid, 0);
}

int keywell_pidfd_is_alive(int pidfd) {
    return (int)syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0);
}

int keywell_open_in_root(int root_fd, const char *path, int extra_flags) {
    struct open_how how;
    memset(&how, 0, sizeof how);
    how.flags = (unsigned long long)(O_RDONLY | O_CLOEXEC | O_NOCTTY | extra_flags);
    how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
    return (int)syscall(SYS_openat2, root_fd, path, &how, sizeof how);
}
