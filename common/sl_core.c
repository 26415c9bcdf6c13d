/*
 * sl_core.c -- status text, assertions, allocation, byte buffers and syncing
 * a file to disk.
 */
#include "sl.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *sl_strerror(int status)
{
    switch (status) {
    case SL_OK:
        return "ok";
    case SL_ENOMEM:
        return "out of memory";
    case SL_EINVAL:
        return "invalid argument";
    case SL_EBUSY:
        return "busy";
    case SL_ECLOSED:
        return "closed";
    case SL_EIO:
        return "I/O error";
    case SL_ENOTFOUND:
        return "not found";
    case SL_EEXIST:
        return "already exists";
    case SL_ETOOBIG:
        return "too big";
    case SL_ELIMIT:
        return "over a tenant's cap";
    case SL_EUNAVAIL:
        return "unavailable here now";
    case SL_EBUDGET:
        return "memory budget spent";
    default:
        return "unknown error";
    }
}

void sl_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "sluice: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

static _Noreturn void out_of_memory(size_t n)
{
    fprintf(stderr, "sluice: out of memory allocating %zu bytes\n", n);
    abort();
}

void *sl_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (p == NULL) {
        out_of_memory(n);
    }
    return p;
}

void *sl_xcalloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (p == NULL) {
        out_of_memory(count * size);
    }
    return p;
}

void *sl_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (q == NULL) {
        out_of_memory(n);
    }
    return q;
}

char *sl_xstrdup(const char *s)
{
    return sl_xstrndup(s, strlen(s));
}

char *sl_xstrndup(const char *s, size_t n)
{
    char *p = sl_xmalloc(n + 1);
    memcpy(p, s, n);
    p[n] = '\0';
    return p;
}

void *sl_trymalloc(size_t n)
{
    return malloc(n ? n : 1);
}

struct sl_slice sl_slice_cstr(const char *s)
{
    return (struct sl_slice){s, s ? strlen(s) : 0};
}

bool sl_slice_eq(struct sl_slice a, struct sl_slice b)
{
    return a.n == b.n && (a.n == 0 || memcmp(a.p, b.p, a.n) == 0);
}

bool sl_slice_eq_cstr(struct sl_slice a, const char *s)
{
    return sl_slice_eq(a, sl_slice_cstr(s));
}

void sl_buf_init(struct sl_buf *b)
{
    b->p = NULL;
    b->n = 0;
    b->cap = 0;
}

void sl_buf_free(struct sl_buf *b)
{
    free(b->p);
    sl_buf_init(b);
}

void sl_buf_reset(struct sl_buf *b)
{
    b->n = 0;
    if (b->p != NULL) {
        b->p[0] = '\0';
    }
}

void sl_buf_reserve(struct sl_buf *b, size_t extra)
{
    size_t need = b->n + extra + 1;
    if (need <= b->cap) {
        return;
    }
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) {
        cap *= 2;
    }
    b->p = sl_xrealloc(b->p, cap);
    b->cap = cap;
}

void sl_buf_append(struct sl_buf *b, const void *data, size_t n)
{
    sl_buf_reserve(b, n);
    if (n > 0) {
        memcpy(b->p + b->n, data, n);
    }
    b->n += n;
    b->p[b->n] = '\0';
}

void sl_buf_append_cstr(struct sl_buf *b, const char *s)
{
    sl_buf_append(b, s, strlen(s));
}

void sl_buf_append_byte(struct sl_buf *b, char c)
{
    sl_buf_append(b, &c, 1);
}

void sl_buf_vprintf(struct sl_buf *b, const char *fmt, va_list ap)
{
    /* Format once into the room the buffer already has; only text that
     * does not fit is formatted a second time, after growing. (Measuring
     * first, then writing, formatted every text twice.) */
    sl_buf_reserve(b, 64);
    size_t room = b->cap - b->n;
    va_list ap2;
    va_copy(ap2, ap);
    int len = vsnprintf(b->p + b->n, room, fmt, ap2);
    va_end(ap2);
    if (len < 0) {
        b->p[b->n] = '\0';
        return;
    }
    if ((size_t)len >= room) {
        sl_buf_reserve(b, (size_t)len);
        vsnprintf(b->p + b->n, (size_t)len + 1, fmt, ap);
    }
    b->n += (size_t)len;
}

void sl_buf_printf(struct sl_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    sl_buf_vprintf(b, fmt, ap);
    va_end(ap);
}

char *sl_buf_take(struct sl_buf *b, size_t *len_out)
{
    char *p = b->p != NULL ? b->p : sl_xcalloc(1, 1); /* never used: still a "" to free */
    if (len_out != NULL) {
        *len_out = b->n;
    }
    sl_buf_init(b);
    return p;
}

int sl_fsync_path(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return SL_EIO;
    int rc = fsync(fd);
    int saved = errno;
    close(fd);
    errno = saved;
    return rc == 0 ? SL_OK : SL_EIO;
}

int sl_file_create(const char *path, int *fd)
{
    *fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    return *fd >= 0 ? SL_OK : SL_EIO;
}
