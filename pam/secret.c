#define _GNU_SOURCE
#include "secret.h"

#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct secret *secret_new(size_t len)
{
    long page = sysconf(_SC_PAGESIZE);
    if (page <= 0)
        page = 4096;
    size_t need = sizeof(struct secret) + len;
    size_t cap = (need + (size_t)page - 1) / (size_t)page * (size_t)page;
    void *p = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)mlock(p, cap);
#ifdef MADV_DONTDUMP
    (void)madvise(p, cap, MADV_DONTDUMP);
#endif
#ifdef MADV_WIPEONFORK
    (void)madvise(p, cap, MADV_WIPEONFORK);
#endif
    struct secret *s = p;
    s->cap = cap;
    s->len = len;
    return s;
}

void secret_free(struct secret *s)
{
    if (s == NULL)
        return;
    size_t cap = s->cap;
    explicit_bzero(s, cap);
    (void)munlock(s, cap);
    (void)munmap(s, cap);
}

struct secret *secret_from_string(const char *str)
{
    size_t len = strlen(str);
    struct secret *s = secret_new(len);
    if (s != NULL)
        memcpy(s->data, str, len);
    return s;
}
