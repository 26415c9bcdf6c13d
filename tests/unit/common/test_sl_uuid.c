/*
 * test_sl_uuid.c -- version-4 UUIDs: sl_uuid4_from formats given bytes
 * with the version and variant bits set (so ids made from one batch of
 * random bytes are well-formed); sl_uuid4 draws fresh ones from its
 * per-thread pool, with no repeats across refills and across threads, and
 * a forked child does not repeat the ids its parent hands out next.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <pthread.h>

#include "sl.h"

static void from_bytes_sets_version_and_variant(void **state)
{
    uint8_t ones[16], zeros[16] = {0};
    memset(ones, 0xff, sizeof ones);
    char out[37];
    sl_uuid4_from(ones, out);
    assert_string_equal(out, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    sl_uuid4_from(zeros, out);
    assert_string_equal(out, "00000000-0000-4000-8000-000000000000");
    const uint8_t seq[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                             0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    sl_uuid4_from(seq, out);
    assert_string_equal(out, "00112233-4455-4677-8899-aabbccddeeff");
}

static void fresh_ids_are_well_formed_and_differ(void **state)
{
    char a[37], b[37];
    sl_uuid4(a);
    sl_uuid4(b);
    assert_int_equal(strlen(a), 36);
    assert_string_not_equal(a, b);
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(a[i], '-');
        } else {
            assert_true(isxdigit((unsigned char)a[i]) && !isupper((unsigned char)a[i]));
        }
    }
    assert_int_equal(a[14], '4');
    assert_non_null(strchr("89ab", a[19]));
}

#define MANY 2000 /* well past one pool of 512 bytes (32 ids) */

static void assert_uuid4(const char *u)
{
    assert_int_equal(strlen(u), 36);
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(u[i], '-');
        } else {
            assert_non_null(strchr("0123456789abcdef", u[i]));
        }
    }
    assert_int_equal(u[14], '4');           /* version */
    assert_non_null(strchr("89ab", u[19])); /* RFC 4122 variant */
}

static int cmp_id(const void *a, const void *b)
{
    return strcmp(a, b);
}

/* Sorted, then no neighbours equal. */
static void assert_all_distinct(char (*ids)[37], size_t n)
{
    qsort(ids, n, sizeof ids[0], cmp_id);
    for (size_t i = 1; i < n; i++) {
        assert_string_not_equal(ids[i - 1], ids[i]);
    }
}

static void test_format_and_distinct(void **state)
{
    (void)state;
    char(*ids)[37] = calloc(MANY, sizeof *ids);
    for (size_t i = 0; i < MANY; i++) {
        sl_uuid4(ids[i]);
        assert_uuid4(ids[i]);
    }
    assert_all_distinct(ids, MANY);
    free(ids);
}

static void *make_ids(void *arg)
{
    char(*ids)[37] = arg;
    for (size_t i = 0; i < MANY / 2; i++) {
        sl_uuid4(ids[i]);
    }
    return NULL;
}

static void test_threads_do_not_share(void **state)
{
    (void)state;
    char(*ids)[37] = calloc(MANY, sizeof *ids);
    pthread_t a, b;
    assert_int_equal(pthread_create(&a, NULL, make_ids, ids), 0);
    assert_int_equal(pthread_create(&b, NULL, make_ids, ids + MANY / 2), 0);
    pthread_join(a, NULL);
    pthread_join(b, NULL);
    assert_all_distinct(ids, MANY);
    free(ids);
}

static void test_fork_child_draws_anew(void **state)
{
    (void)state;
    char first[37];
    sl_uuid4(first); /* the pool is filled: the child inherits it */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char child[37];
        sl_uuid4(child);
        ssize_t w = write(fds[1], child, sizeof child);
        _exit(w == (ssize_t)sizeof child ? 0 : 1);
    }
    close(fds[1]);
    char parent[37], child[37];
    sl_uuid4(parent);
    assert_int_equal(read(fds[0], child, sizeof child), (ssize_t)sizeof child);
    close(fds[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_uuid4(child);
    assert_string_not_equal(parent, child);
    assert_string_not_equal(first, child);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_bytes_sets_version_and_variant),
        cmocka_unit_test(fresh_ids_are_well_formed_and_differ),
        cmocka_unit_test(test_format_and_distinct),
        cmocka_unit_test(test_threads_do_not_share),
        cmocka_unit_test(test_fork_child_draws_anew),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
