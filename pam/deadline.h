/* The time budget of one PAM phase: every wait on the daemon is bounded by it. */
#ifndef PAM_KEYWELL_DEADLINE_H
#define PAM_KEYWELL_DEADLINE_H

#include <stdint.h>

enum {
    KW_PHASE_MS = 3000,      /* everything one PAM phase may spend on the daemon */
    KW_SPAWN_WAIT_MS = 2000, /* how long a freshly started daemon gets to open its socket */
    KW_POLL_STEP_MS = 20,    /* pause between connection attempts while it starts */
};

/* Milliseconds on the monotonic clock; deadlines are points on it. */
int64_t now_ms(void);
void sleep_ms(int ms);

#endif
