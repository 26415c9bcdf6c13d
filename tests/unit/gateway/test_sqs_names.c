/*
 * test_sqs_names.c -- queue URLs (http[s]://HOST:PORT/TENANT/QUEUE), queue
 * and tenant name rules, and queue ARNs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gw_sqs.h"

static void test_queue_url_good(void **state)
{
    (void)state;
    static const struct {
        const char *url, *tenant, *name;
        bool fifo;
    } cases[] = {
        {"http://127.0.0.1:9324/acme/orders", "acme", "orders", false},
        {"https://sqs.example.com/a_b-C/q.fifo", "a_b-C", "q.fifo", true},
        {"http://[::1]:9324/default/x", "default", "x", false},
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct gw_sqs_queue_ref q;
        struct gw_sqs_err err;
        assert_int_equal(gw_sqs_parse_queue_url(sl_slice_cstr(cases[i].url), &q, &err), SL_OK);
        assert_true(sl_slice_eq_cstr(q.tenant, cases[i].tenant));
        assert_true(sl_slice_eq_cstr(q.name, cases[i].name));
        assert_true(sl_slice_eq_cstr(q.url, cases[i].url));
        assert_int_equal(q.fifo, cases[i].fifo);
    }
}

static void test_queue_url_bad(void **state)
{
    (void)state;
    static const char *invalid_address[] = {
        "",
        "orders",
        "ftp://h/acme/q",
        "http://",
        "http:///acme/q",
        "http://h:1",
        "http://h:1/",
        "http://h:1/acme",
        "http://h:1/acme/",
        "http://h:1//q",
        "http://h:1/acme/q/extra",
        "http://user@h:1/acme/q",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(invalid_address); i++) {
        struct gw_sqs_queue_ref q;
        struct gw_sqs_err err;
        assert_int_equal(gw_sqs_parse_queue_url(sl_slice_cstr(invalid_address[i]), &q, &err),
                         SL_EINVAL);
        assert_int_equal(err.code, GW_SQS_E_INVALID_ADDRESS);
    }
    static const char *no_such_queue[] = {
        "http://h:1/acme/bad.name",
        "http://h:1/acme/.fifo",
        "http://h:1/ac.me/q",
        ("http://h:1/acme/"
         "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(no_such_queue); i++) {
        struct gw_sqs_queue_ref q;
        struct gw_sqs_err err;
        assert_int_equal(gw_sqs_parse_queue_url(sl_slice_cstr(no_such_queue[i]), &q, &err),
                         SL_EINVAL);
        assert_int_equal(err.code, GW_SQS_E_QUEUE_DOES_NOT_EXIST);
        assert_string_equal(err.message, "The specified queue does not exist.");
    }
}

static void test_queue_names(void **state)
{
    (void)state;
    bool fifo;
    char name[90];
    memset(name, 'a', sizeof(name));
    assert_true(gw_sqs_queue_name_valid((struct sl_slice){name, 80}, &fifo));
    assert_false(fifo);
    assert_false(gw_sqs_queue_name_valid((struct sl_slice){name, 81}, &fifo));
    memcpy(name + 75, ".fifo", sizeof ".fifo"); /* a NUL at 80, past the slices */
    assert_true(gw_sqs_queue_name_valid((struct sl_slice){name, 80}, &fifo));
    assert_true(fifo);
    assert_false(gw_sqs_queue_name_valid(SL_SLICE_LIT(""), &fifo));
    assert_false(gw_sqs_queue_name_valid(SL_SLICE_LIT(".fifo"), &fifo));
    assert_false(gw_sqs_queue_name_valid(SL_SLICE_LIT("a.b"), &fifo));
    assert_false(gw_sqs_queue_name_valid(SL_SLICE_LIT("a b"), &fifo));
    assert_true(gw_sqs_queue_name_valid(SL_SLICE_LIT("A-z_09"), &fifo));
    assert_true(gw_sqs_tenant_name_valid(SL_SLICE_LIT("acme")));
    assert_false(gw_sqs_tenant_name_valid(SL_SLICE_LIT("")));
    assert_false(gw_sqs_tenant_name_valid(SL_SLICE_LIT("a.b")));
    memset(name, 'a', sizeof(name));
    assert_true(gw_sqs_tenant_name_valid((struct sl_slice){name, 64}));
    assert_false(gw_sqs_tenant_name_valid((struct sl_slice){name, 65}));
}

static void test_arns(void **state)
{
    (void)state;
    struct gw_sqs_arn a;
    assert_true(gw_sqs_parse_arn(SL_SLICE_LIT("arn:aws:sqs:us-east-1:acme:dlq"), &a));
    assert_true(sl_slice_eq_cstr(a.region, "us-east-1"));
    assert_true(sl_slice_eq_cstr(a.account, "acme"));
    assert_true(sl_slice_eq_cstr(a.name, "dlq"));
    assert_false(gw_sqs_parse_arn(SL_SLICE_LIT("arn:aws:sns:us-east-1:acme:dlq"), &a));
    assert_false(gw_sqs_parse_arn(SL_SLICE_LIT("arn:aws:sqs:us-east-1:acme"), &a));
    assert_false(gw_sqs_parse_arn(SL_SLICE_LIT("arn:aws:sqs::acme:q"), &a));
    assert_false(gw_sqs_parse_arn(SL_SLICE_LIT("arn:aws:sqs:r:acme:q:x"), &a));
}

static void test_attribute_names(void **state)
{
    (void)state;
    enum gw_sqs_qattr a;
    for (int i = 0; i < GW_SQS_QATTR__COUNT; i++) {
        assert_true(
            gw_sqs_qattr_lookup(sl_slice_cstr(gw_sqs_qattr_name((enum gw_sqs_qattr)i)), &a));
        assert_int_equal(a, i);
    }
    assert_false(gw_sqs_qattr_lookup(SL_SLICE_LIT("All"), &a));
    assert_string_equal(gw_sqs_sysattr_name(GW_SQS_SYSATTR_AWS_TRACE_HEADER), "AWSTraceHeader");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_queue_url_good),  cmocka_unit_test(test_queue_url_bad),
        cmocka_unit_test(test_queue_names),     cmocka_unit_test(test_arns),
        cmocka_unit_test(test_attribute_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
