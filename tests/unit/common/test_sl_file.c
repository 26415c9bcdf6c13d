/*
 * test_sl_file.c -- sl_file_create: a new file, mode 0600; a name that
 * exists already, or a symlink planted under it (dangling or not), is
 * refused and whatever it points to is left alone.
 */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "sl.h"

static char dir[64];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/sluice-file-test-XXXXXX");
    return mkdtemp(dir) != NULL ? 0 : -1;
}

/* The names the tests make, and the directory. */
static int teardown(void **state)
{
    (void)state;
    const char *names[] = {"new", "victim", "link", "dangling"};
    char path[128];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        unlink(path);
    }
    return rmdir(dir);
}

static void creates_a_private_file(void **state)
{
    (void)state;
    char path[128];
    snprintf(path, sizeof path, "%s/new", dir);
    int fd = -1;
    mode_t old = umask(0);
    assert_int_equal(sl_file_create(path, &fd), SL_OK);
    umask(old);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "x", 1), 1);
    assert_int_equal(close(fd), 0);
    struct stat st;
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_int_equal(st.st_mode & 0777, 0600);

    /* exists: refused, left as it was */
    assert_int_equal(sl_file_create(path, &fd), SL_EIO);
    assert_int_equal(errno, EEXIST);
    assert_int_equal(lstat(path, &st), 0);
    assert_int_equal(st.st_size, 1);
}

static void refuses_a_planted_symlink(void **state)
{
    (void)state;
    char victim[128], link[128], dangling[128];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    snprintf(link, sizeof link, "%s/link", dir);
    snprintf(dangling, sizeof dangling, "%s/dangling", dir);
    FILE *f = fopen(victim, "w");
    assert_non_null(f);
    fputs("keep", f);
    fclose(f);
    assert_int_equal(symlink(victim, link), 0);
    char nowhere[160];
    snprintf(nowhere, sizeof nowhere, "%s/nowhere", dir);
    assert_int_equal(symlink(nowhere, dangling), 0);

    int fd = -1;
    assert_int_equal(sl_file_create(link, &fd), SL_EIO);
    assert_int_equal(fd, -1);
    assert_int_equal(sl_file_create(dangling, &fd), SL_EIO);
    struct stat st;
    assert_int_equal(lstat(nowhere, &st), -1); /* not created through the link */
    assert_int_equal(lstat(victim, &st), 0);
    assert_int_equal(st.st_size, 4);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(creates_a_private_file, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_a_planted_symlink, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
