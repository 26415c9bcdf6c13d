/*
 * test_sl_log.c -- the log line format and per-thread buffering: buffered
 * lines stay unwritten until a flush, a WARN line writes what is buffered
 * first (order kept), a full buffer writes whole lines only, and stopping
 * flushes; sl_log_escape keeps a value to its quotes and its line. stderr
 * is redirected to a temporary file for each test.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "sl.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct capture {
    int saved_stderr;
    FILE *file;
};

static int capture_setup(void **state)
{
    struct capture *c = calloc(1, sizeof *c);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved_stderr = dup(STDERR_FILENO);
    assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
    sl_log_set_level(SL_LOG_DEBUG);
    *state = c;
    return 0;
}

static int capture_teardown(void **state)
{
    struct capture *c = *state;
    sl_log_buffer_stop();
    dup2(c->saved_stderr, STDERR_FILENO);
    close(c->saved_stderr);
    fclose(c->file);
    free(c);
    sl_log_set_level(SL_LOG_INFO);
    return 0;
}

/* What has reached stderr so far; the caller frees it. */
static char *captured(struct capture *c)
{
    long n = lseek(fileno(c->file), 0, SEEK_END);
    assert_true(n >= 0);
    char *s = calloc(1, (size_t)n + 1);
    assert_int_equal(pread(fileno(c->file), s, (size_t)n, 0), n);
    return s;
}

static size_t count_lines(const char *s)
{
    size_t n = 0;
    for (; *s != '\0'; s++) {
        n += *s == '\n';
    }
    return n;
}

static void test_line_format(void **state)
{
    sl_log(SL_LOG_INFO, "gw", "request id=%d", 7);
    char *s = captured(*state);
    /* 2026-11-21T07:09:00.123Z INFO [gw] request id=7 */
    assert_int_equal(strlen(s), 24 + strlen(" INFO [gw] request id=7\n"));
    assert_true(s[4] == '-' && s[7] == '-' && s[10] == 'T' && s[13] == ':' && s[16] == ':');
    assert_true(s[19] == '.' && s[23] == 'Z' && s[24] == ' ');
    for (int i = 20; i < 23; i++) {
        assert_true(s[i] >= '0' && s[i] <= '9');
    }
    assert_string_equal(s + 25, "INFO [gw] request id=7\n");
    free(s);
}

static void test_level_filter(void **state)
{
    sl_log_set_level(SL_LOG_WARN);
    sl_log(SL_LOG_INFO, "gw", "hidden");
    sl_log(SL_LOG_WARN, "gw", "shown");
    char *s = captured(*state);
    assert_null(strstr(s, "hidden"));
    assert_non_null(strstr(s, "WARN [gw] shown\n"));
    free(s);
}

static void test_buffered_until_flush(void **state)
{
    sl_log_buffer_start();
    sl_log(SL_LOG_INFO, "gw", "one");
    sl_log(SL_LOG_DEBUG, "gw", "two");
    char *s = captured(*state);
    assert_string_equal(s, "");
    free(s);
    sl_log_flush();
    s = captured(*state);
    assert_int_equal(count_lines(s), 2);
    assert_true(strstr(s, "INFO [gw] one\n") < strstr(s, "DEBUG [gw] two\n"));
    free(s);
}

static void test_warn_writes_buffered_lines_first(void **state)
{
    sl_log_buffer_start();
    sl_log(SL_LOG_INFO, "gw", "before");
    sl_log(SL_LOG_ERROR, "part", "broken");
    char *s = captured(*state);
    char *before = strstr(s, "INFO [gw] before\n");
    char *broken = strstr(s, "ERROR [part] broken\n");
    assert_non_null(before);
    assert_non_null(broken);
    assert_true(before < broken);
    free(s);
}

static void test_full_buffer_writes_whole_lines(void **state)
{
    sl_log_buffer_start();
    char text[200];
    memset(text, 'x', sizeof text - 1);
    text[sizeof text - 1] = '\0';
    size_t logged = 0;
    char *s = NULL;
    /* Log until something reaches stderr without a flush: the buffer is
     * bounded, and what it wrote must be whole lines. */
    for (; logged < 10000; logged++) {
        sl_log(SL_LOG_INFO, "gw", "%zu %s", logged, text);
        s = captured(*state);
        if (s[0] != '\0') {
            break;
        }
        free(s);
        s = NULL;
    }
    assert_non_null(s);
    assert_true(logged > 10);
    size_t len = strlen(s);
    assert_true(len < 65536);
    assert_int_equal(s[len - 1], '\n');
    assert_int_equal(count_lines(s), logged);
    free(s);
    sl_log_buffer_stop(); /* stopping flushes the last line too */
    s = captured(*state);
    assert_int_equal(count_lines(s), logged + 1);
    free(s);
}

static void test_long_line_is_cut_not_overflowed(void **state)
{
    size_t n = 5000;
    char *big = malloc(n + 1);
    memset(big, 'y', n);
    big[n] = '\0';
    sl_log(SL_LOG_INFO, "gw", "%s", big);
    free(big);
    char *s = captured(*state);
    assert_int_equal(count_lines(s), 1);
    assert_true(strlen(s) <= 2048);
    assert_int_equal(s[strlen(s) - 1], '\n');
    free(s);
}

/* A limited call site writes burst lines per window; the rest are counted
 * and the first line of the next window reports them. The window here is
 * started by hand so that the test never depends on the clock. */
static void test_limited_lines_are_counted_not_written(void **state)
{
    struct capture *c = *state;
    static struct sl_log_limit lim = SL_LOG_LIMIT(3, 3600u * 1000u);
    for (int i = 0; i < 1000; i++) {
        sl_log_limited(&lim, SL_LOG_WARN, "gw", "accept: too many open files %d", i);
    }
    char *out = captured(c);
    assert_int_equal(count_lines(out), 3);
    assert_null(strstr(out, "suppressed"));
    free(out);

    /* A new window: one more line, which carries the count. */
    atomic_store(&lim.window_start_ms, 0);
    lim.interval_ms = 1;
    sl_log_limited(&lim, SL_LOG_WARN, "gw", "accept: too many open files again");
    out = captured(c);
    assert_int_equal(count_lines(out), 4);
    assert_non_null(strstr(out, "again (997 similar lines suppressed)\n"));
    free(out);
}

static void test_escape(void **state)
{
    (void)state;
    static const char in[] = "a\"b\\c\nd\re\tf\x01g\x7fh\xc3\xa9";
    char out[64];
    sl_log_escape(in, sizeof in - 1, out, sizeof out);
    assert_string_equal(out, "a\\\"b\\\\c\\nd\\re\\tf\\x01g\\x7fh\xc3\xa9");
    /* an embedded NUL is a control byte like the others */
    sl_log_escape("x\0y", 3, out, sizeof out);
    assert_string_equal(out, "x\\x00y");
    /* cut before an escape that does not fit: never half of one */
    sl_log_escape("ab\"", 3, out, 4);
    assert_string_equal(out, "ab");
    sl_log_escape("abc", 3, out, 1);
    assert_string_equal(out, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escape),
        cmocka_unit_test_setup_teardown(test_line_format, capture_setup, capture_teardown),
        cmocka_unit_test_setup_teardown(test_level_filter, capture_setup, capture_teardown),
        cmocka_unit_test_setup_teardown(test_buffered_until_flush, capture_setup, capture_teardown),
        cmocka_unit_test_setup_teardown(test_warn_writes_buffered_lines_first, capture_setup,
                                        capture_teardown),
        cmocka_unit_test_setup_teardown(test_full_buffer_writes_whole_lines, capture_setup,
                                        capture_teardown),
        cmocka_unit_test_setup_teardown(test_limited_lines_are_counted_not_written, capture_setup,
                                        capture_teardown),
        cmocka_unit_test_setup_teardown(test_long_line_is_cut_not_overflowed, capture_setup,
                                        capture_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
