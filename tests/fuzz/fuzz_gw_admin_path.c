/*
 * fuzz_gw_admin_path.c -- the admin API's request targets: the path after
 * "/api/" split into %XX-decoded segments (gw__admin_split_path) and the
 * query parameters the routes read (gw__admin_query).
 *
 * The input is a request target "PATH?QUERY" (in a buffer of exactly its
 * size, so any read past the end is a sanitizer report). Whatever the
 * splitter accepts must hold up: at most GW_ADMIN_MAX_SEGS segments, none
 * empty, none with a NUL, each no longer than the text it came from; a
 * refused path leaves nothing allocated behind (LeakSanitizer). A query
 * value found fits its buffer and is NUL-terminated.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gw_admin_int.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *copy = malloc(size > 0 ? size : 1);
    if (size > 0) {
        memcpy(copy, data, size);
    }
    const char *q = memchr(copy, '?', size);
    size_t path_n = q != NULL ? (size_t)(q - copy) : size;
    struct gw_admin_req r;
    memset(&r, 0, sizeof r);
    r.query = q != NULL ? (struct sl_slice){q + 1, size - path_n - 1} : (struct sl_slice){"", 0};
    int rc = gw__admin_split_path(&r, (struct sl_slice){copy, path_n});
    SL_ASSERT(rc == SL_OK || rc == SL_EINVAL);
    SL_ASSERT(r.nseg <= GW_ADMIN_MAX_SEGS);
    for (size_t i = 0; i < r.nseg; i++) {
        size_t n = strlen(r.seg[i]);
        SL_ASSERT(rc != SL_OK || (n > 0 && n <= path_n));
        free(r.seg[i]);
    }
    static const char *const names[] = {"max", "tenant", ""};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char buf[16];
        const char *v = gw__admin_query(&r, names[i], buf, sizeof buf);
        SL_ASSERT(v == NULL || (v == buf && memchr(buf, '\0', sizeof buf) != NULL));
    }
    free(copy);
    return 0;
}
