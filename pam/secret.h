/*
 * Secrets live in their own anonymous mapping: locked out of swap when the limit allows,
 * left out of core dumps, and wiped in forked children (the daemon spawn forks this process).
 * All best effort; explicit_bzero on release is the part that always happens.
 */
#ifndef PAM_KEYWELL_SECRET_H
#define PAM_KEYWELL_SECRET_H

#include <stddef.h>

struct secret {
    size_t cap; /* size of the whole mapping, this header included */
    size_t len;
    unsigned char data[];
};

/* NULL when no memory could be mapped. */
struct secret *secret_new(size_t len);
struct secret *secret_from_string(const char *str);
/* Wipes and unmaps; NULL is fine. */
void secret_free(struct secret *s);

#endif
