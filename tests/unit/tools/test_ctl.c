/*
 * test_ctl.c -- sluicectl's logic without a gateway: aligned tables
 * (widths by code point, numbers right-aligned), where each setting comes
 * from (flag over environment over config file over default; no default
 * credentials; a file line it cannot read is an error naming it), queue
 * names given as ARN, URL or TENANT/QUEUE, and body excerpts that never
 * cut a UTF-8 character or pass a control character through; which
 * failed polls are retried, and after how long.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctl_cmd.h"
#include "ctl_config.h"
#include "ctl_table.h"

/* The table printed into a string (owned). */
static char *render(const struct ctl_table *t)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    ctl_table_print(t, f);
    fclose(f);
    return buf;
}

static void test_table_alignment(void **state)
{
    (void)state;
    struct ctl_table t;
    ctl_table_init(&t, (const char *[]){"QUEUE", "READY", "NOTE", NULL});
    ctl_table_row(&t, (const char *[]){"orders", "5", "ok"});
    ctl_table_rowf(&t, "%s\t%d\t%s", "café-dlq", 1234, "naïve");
    ctl_table_row(&t, (const char *[]){"x", NULL, "last"});
    char *out = render(&t);
    assert_string_equal(out, "QUEUE     READY  NOTE\n"
                             "orders        5  ok\n"
                             "café-dlq   1234  naïve\n"
                             "x             -  last\n");
    free(out);
    ctl_table_free(&t);

    /* a text column stays left-aligned */
    ctl_table_init(&t, (const char *[]){"A", "B", NULL});
    ctl_table_row(&t, (const char *[]){"12", "x"});
    ctl_table_row(&t, (const char *[]){"abc", "y"});
    out = render(&t);
    assert_string_equal(out, "A    B\n12   x\nabc  y\n");
    free(out);
    ctl_table_free(&t);
}

static char dir[] = "/tmp/ctl-test-XXXXXX";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void clear_env(void)
{
    static const char *const vars[] = {
        "SLUICE_ENDPOINT",      "SLUICE_ADMIN_ENDPOINT",
        "SLUICE_ACCESS_KEY_ID", "SLUICE_SECRET_ACCESS_KEY",
        "SLUICE_REGION",        "SLUICE_ADMIN_TOKEN",
        "SLUICE_CACERT",        "CURL_CA_BUNDLE",
        "SSL_CERT_FILE",        "SLUICECTL_CONFIG",
        "XDG_CONFIG_HOME",
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        unsetenv(vars[i]);
    }
    setenv("HOME", dir, 1); /* no ~/.config/sluice/sluicectl.conf there */
}

static void test_settings_precedence(void **state)
{
    (void)state;
    clear_env();
    char path[128], err[256];
    snprintf(path, sizeof path, "%s/c.conf", dir);
    write_file(path, "# comment\n"
                     "endpoint = http://file:1\n"
                     "access_key_id = file-key   # trailing comment\n"
                     "secret_access_key = file#secret\n"
                     "region=eu-west-1\n");

    struct ctl_config c = {.config_path = path};
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_string_equal(c.value[CTL_ENDPOINT], "http://file:1");
    assert_string_equal(c.from[CTL_ENDPOINT], "config file");
    assert_string_equal(c.value[CTL_ACCESS_KEY_ID], "file-key");
    /* a '#' inside a value is not a comment: secrets may hold one */
    assert_string_equal(c.value[CTL_SECRET], "file#secret");
    assert_string_equal(c.value[CTL_REGION], "eu-west-1");
    assert_string_equal(c.value[CTL_ADMIN_ENDPOINT], "http://127.0.0.1:9325");
    assert_string_equal(c.from[CTL_ADMIN_ENDPOINT], "default");
    assert_null(c.value[CTL_ADMIN_TOKEN]);
    ctl_config_free(&c);

    /* the environment beats the file, the flag beats both */
    setenv("SLUICE_ACCESS_KEY_ID", "env-key", 1);
    setenv("SLUICE_ENDPOINT", "http://env:2", 1);
    c = (struct ctl_config){.config_path = path};
    c.flag[CTL_ENDPOINT] = "http://flag:3";
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_string_equal(c.value[CTL_ENDPOINT], "http://flag:3");
    assert_string_equal(c.from[CTL_ENDPOINT], "flag");
    assert_string_equal(c.value[CTL_ACCESS_KEY_ID], "env-key");
    assert_string_equal(c.from[CTL_ACCESS_KEY_ID], "environment");
    assert_string_equal(c.value[CTL_SECRET], "file#secret");
    ctl_config_free(&c);

    /* the CA bundle: SLUICE_CACERT, then the variables other clients read */
    setenv("SSL_CERT_FILE", "/ssl.pem", 1);
    c = (struct ctl_config){.config_path = path};
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_string_equal(c.value[CTL_CACERT], "/ssl.pem");
    ctl_config_free(&c);
    setenv("CURL_CA_BUNDLE", "/curl.pem", 1);
    c = (struct ctl_config){.config_path = path};
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_string_equal(c.value[CTL_CACERT], "/curl.pem");
    ctl_config_free(&c);
    setenv("SLUICE_CACERT", "/sluice.pem", 1);
    c = (struct ctl_config){.config_path = path};
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_string_equal(c.value[CTL_CACERT], "/sluice.pem");
    ctl_config_free(&c);
}

static void test_settings_no_defaults_for_secrets(void **state)
{
    (void)state;
    clear_env();
    char err[256];
    struct ctl_config c = {0}; /* no file under HOME: fine, nothing from it */
    assert_true(ctl_config_resolve(&c, err, sizeof err));
    assert_null(c.value[CTL_ACCESS_KEY_ID]);
    assert_null(c.value[CTL_SECRET]);
    assert_null(c.from[CTL_SECRET]);
    assert_string_equal(c.value[CTL_ENDPOINT], "http://127.0.0.1:9324");
    assert_string_equal(c.file_used, "");
    ctl_config_free(&c);

    /* a named file that is missing, or a line that is not key = value */
    char path[128];
    snprintf(path, sizeof path, "%s/missing.conf", dir);
    c = (struct ctl_config){.config_path = path};
    assert_false(ctl_config_resolve(&c, err, sizeof err));
    assert_non_null(strstr(err, "cannot read the config file"));
    ctl_config_free(&c);
    snprintf(path, sizeof path, "%s/bad.conf", dir);
    write_file(path, "endpoint = http://x\n\nsecret: nope\n");
    c = (struct ctl_config){.config_path = path};
    assert_false(ctl_config_resolve(&c, err, sizeof err));
    assert_non_null(strstr(err, "bad.conf:3: expected \"key = value\""));
    ctl_config_free(&c);
    write_file(path, "password = x\n");
    c = (struct ctl_config){.config_path = path};
    assert_false(ctl_config_resolve(&c, err, sizeof err));
    ctl_config_free(&c);
}

static void test_queue_names(void **state)
{
    (void)state;
    char t[65], n[81];
    assert_true(ctl_queue_name("arn:aws:sqs:us-east-1:acme:orders-dlq", t, sizeof t, n, sizeof n));
    assert_string_equal(t, "acme");
    assert_string_equal(n, "orders-dlq");
    assert_true(ctl_queue_name("http://127.0.0.1:9324/acme/q.fifo", t, sizeof t, n, sizeof n));
    assert_string_equal(t, "acme");
    assert_string_equal(n, "q.fifo");
    assert_true(ctl_queue_name("acme/q", t, sizeof t, n, sizeof n));
    assert_string_equal(n, "q");
    assert_false(ctl_queue_name("acme", t, sizeof t, n, sizeof n));
    assert_false(ctl_queue_name("acme/", t, sizeof t, n, sizeof n));
    assert_false(ctl_queue_name("/q", t, sizeof t, n, sizeof n));
    assert_false(ctl_queue_name("a/b/c", t, sizeof t, n, sizeof n));
    assert_false(ctl_queue_name("arn:aws:sqs:r", t, sizeof t, n, sizeof n));
    assert_false(ctl_queue_name("http://h:1/acme", t, sizeof t, n, sizeof n));

    struct ctl c = {.ep = {.region = "eu-west-1"}};
    char arn[256];
    assert_true(ctl_queue_arn(&c, "acme/q", arn, sizeof arn));
    assert_string_equal(arn, "arn:aws:sqs:eu-west-1:acme:q");
    assert_true(ctl_queue_arn(&c, "arn:aws:sqs:us-east-1:acme:q", arn, sizeof arn));
    assert_string_equal(arn, "arn:aws:sqs:us-east-1:acme:q");
}

static void test_excerpt(void **state)
{
    (void)state;
    char out[64];
    ctl_excerpt("line one\nline\ttwo", 40, out, sizeof out);
    assert_string_equal(out, "line one line two");
    ctl_excerpt("héllo wörld", 4, out, sizeof out);
    assert_string_equal(out, "héll...");
    ctl_excerpt("abc", 3, out, sizeof out);
    assert_string_equal(out, "abc");
    ctl_excerpt(NULL, 3, out, sizeof out);
    assert_string_equal(out, "");
    char tiny[6];
    ctl_excerpt("abcdefghij", 100, tiny, sizeof tiny); /* bounded by the buffer */
    assert_true(strlen(tiny) < sizeof tiny);
}

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) != NULL ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

/* A poll refused for a moment is retried, after the server's Retry-After
 * or a back-off that doubles from 1 s to 8 s; a refusal that will not
 * change (403 AccessDenied, 404) is not. */
static void test_poll_backoff(void **state)
{
    (void)state;
    struct ctl_reply r = {.status = 400};
    snprintf(r.code, sizeof r.code, "RequestThrottled");
    assert_true(ctl_poll_retryable(&r));
    const long want[] = {1000, 2000, 4000, 8000, 8000, 8000};
    for (int m = 1; m <= 6; m++) {
        assert_int_equal(ctl_poll_backoff_ms(&r, m), want[m - 1]);
    }
    r.retry_after_ms = 3000;
    assert_int_equal(ctl_poll_backoff_ms(&r, 1), 3000);
    assert_int_equal(ctl_poll_backoff_ms(&r, 9), 3000);
    r.retry_after_ms = 86400000;
    assert_int_equal(ctl_poll_backoff_ms(&r, 1), 32000);
    struct ctl_reply lost = {.status = 0};
    assert_true(ctl_poll_retryable(&lost));
    struct ctl_reply busy = {.status = 503};
    assert_true(ctl_poll_retryable(&busy));
    struct ctl_reply ration = {.status = 429};
    assert_true(ctl_poll_retryable(&ration));
    struct ctl_reply denied = {.status = 403};
    snprintf(denied.code, sizeof denied.code, "AccessDenied");
    assert_false(ctl_poll_retryable(&denied));
    struct ctl_reply gone = {.status = 404};
    snprintf(gone.code, sizeof gone.code, "NotFound");
    assert_false(ctl_poll_retryable(&gone));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_alignment),
        cmocka_unit_test(test_settings_precedence),
        cmocka_unit_test(test_settings_no_defaults_for_secrets),
        cmocka_unit_test(test_queue_names),
        cmocka_unit_test(test_excerpt),
        cmocka_unit_test(test_poll_backoff),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
