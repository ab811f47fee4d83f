#define _GNU_SOURCE
#include "CProcessPinning.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
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

/* One netlink socket, kept: the question is asked at every new caller of the direct socket, and
   making and closing a socket each time cost as much as the question itself. The lock keeps one
   question and its answer together; each carries its own sequence number, and an answer to
   another (none should be left over) is skipped. The kernel answers inside sendto, so the answer
   is read without waiting; any failure of the socket itself closes it for the next call to remake. */
static pthread_mutex_t diag_lock = PTHREAD_MUTEX_INITIALIZER;
static int diag_socket = -1;
static unsigned int diag_sequence;

static void diag_reset(void) {
    int saved = errno;
    if (diag_socket >= 0) close(diag_socket);
    diag_socket = -1;
    errno = saved;
}

static int unix_socket_info_locked(unsigned int inode, unsigned int *peer_inode, char *name, size_t name_size,
                                   size_t *name_length) {
    if (diag_socket < 0) {
        diag_socket = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
        if (diag_socket < 0) return -1;
    }
    struct {
        struct nlmsghdr header;
        struct unix_diag_req request;
    } message;
    memset(&message, 0, sizeof message);
    message.header.nlmsg_len = sizeof message;
    message.header.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    message.header.nlmsg_flags = NLM_F_REQUEST;
    message.header.nlmsg_seq = ++diag_sequence;
    message.request.sdiag_family = AF_UNIX;
    message.request.udiag_states = ~0U;
    message.request.udiag_ino = inode;
    message.request.udiag_show = UDIAG_SHOW_PEER | UDIAG_SHOW_NAME;
    message.request.udiag_cookie[0] = INET_DIAG_NOCOOKIE;
    message.request.udiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl kernel;
    memset(&kernel, 0, sizeof kernel);
    kernel.nl_family = AF_NETLINK;
    ssize_t sent;
    do sent = sendto(diag_socket, &message, sizeof message, 0, (struct sockaddr *)&kernel, sizeof kernel);
    while (sent < 0 && errno == EINTR);
    if (sent < 0) {
        diag_reset();
        return -1;
    }
    /* One answer: a unix_diag_msg and its attributes (a name is at most 108 bytes). */
    long buffer[1024];
    ssize_t received;
    struct nlmsghdr *header = (struct nlmsghdr *)buffer;
    for (int attempt = 0;; attempt++) {
        if (attempt == 8) {
            errno = EBADMSG;
            diag_reset();
            return -1;
        }
        do received = recv(diag_socket, buffer, sizeof buffer, MSG_DONTWAIT);
        while (received < 0 && errno == EINTR);
        if (received < 0) {
            diag_reset();
            return -1;
        }
        if (NLMSG_OK(header, (unsigned int)received) && header->nlmsg_seq == message.header.nlmsg_seq) break;
    }
    if (header->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *failure = NLMSG_DATA(header);
        errno = failure->error ? -failure->error : ENOENT;
        return -1;
    }
    if (header->nlmsg_type != SOCK_DIAG_BY_FAMILY || header->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg))) {
        errno = EBADMSG;
        return -1;
    }
    struct unix_diag_msg *answer = NLMSG_DATA(header);
    if (answer->udiag_ino != inode) {
        errno = ENOENT;
        return -1;
    }
    *peer_inode = 0;
    if (name_length) *name_length = 0;
    int length = (int)(header->nlmsg_len - NLMSG_LENGTH(sizeof *answer));
    for (struct rtattr *attribute = (struct rtattr *)(answer + 1); RTA_OK(attribute, length);
         attribute = RTA_NEXT(attribute, length)) {
        size_t size = RTA_PAYLOAD(attribute);
        if (attribute->rta_type == UNIX_DIAG_PEER && size >= sizeof(unsigned int)) {
            memcpy(peer_inode, RTA_DATA(attribute), sizeof(unsigned int));
        } else if (attribute->rta_type == UNIX_DIAG_NAME && name && name_length) {
            if (size > name_size) size = name_size;
            memcpy(name, RTA_DATA(attribute), size);
            *name_length = size;
        }
    }
    return 0;
}

int keywell_unix_socket_info(unsigned int inode, unsigned int *peer_inode, char *name, size_t name_size,
                             size_t *name_length) {
    pthread_mutex_lock(&diag_lock);
    int status = unix_socket_info_locked(inode, peer_inode, name, name_size, name_length);
    int saved = errno;
    pthread_mutex_unlock(&diag_lock);
    errno = saved;
    return status;
}
