/* libdbus's archive refers to two libsystemd functions, from the code that lets a bus daemon take
   its listening sockets from systemd (_dbus_listen_systemd_sockets). `keywell` links libdbus
   statically so as not to load libsystemd and the five libraries behind it at every start
   (docs/performance.md); a client never listens, so these never run there. They answer what
   libsystemd answers to a process systemd passed no sockets: none (sd_listen_fds(3)).
   Hidden: they must not stand in for libsystemd's in any shared library of the process. */
#include "CStaticDBusLink.h"

__attribute__((visibility("hidden"))) int sd_listen_fds(int unset_environment) {
    (void)unset_environment;
    return 0;
}

__attribute__((visibility("hidden"))) int sd_is_socket(int fd, int family, int type, int listening) {
    (void)fd;
    (void)family;
    (void)type;
    (void)listening;
    return 0;
}
