/*
 * test_json_load.c -- the SQS JSON request parser (gw_json_load.h):
 *  - what SDKs send (batches, attributes, escapes, non-ASCII text,
 *    nested JSON in strings) takes cJSON's path, and every body the
 *    filter's list names takes jansson's;
 *  - either way the document is jansson's: equal to json_loadb's for a
 *    table of bodies on both paths, and NULL with jansson's error text
 *    where jansson refuses.
 * tests/fuzz/fuzz_json_load.c checks the same equivalence on arbitrary
 * bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gw_json_load.h"

static const char *const fast_bodies[] = {
    ("{\"QueueUrl\":\"http://127.0.0.1:9324/000000000000/q\",\"Entries\":[{\"Id\":\"a\","
     "\"MessageBody\":\"hello\",\"DelaySeconds\":5,\"MessageAttributes\":{\"n\":{\"DataType\":"
     "\"Number\",\"StringValue\":\"1.5e3\"}}},{\"Id\":\"b\",\"MessageBody\":\"x\"}]}"),
    ("{\"QueueName\":\"q\",\"Attributes\":{\"RedrivePolicy\":\"{\\\"maxReceiveCount\\\":"
     "\\\"5\\\"}\"}}"),
    "{\"MessageBody\":\"caf\\u00e9 \\\"quoted\\\" \\\\ \\/ \\b\\f\\n\\r\\t\"}",
    "{\"MessageBody\":\"d\xc3\xa9j\xc3\xa0 vu \xf0\x9f\x98\x80\"}",
    "{\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":0,\"VisibilityTimeout\":-1}",
    "{\"AttributeNames\":[\"All\"],\"MessageAttributeNames\":[],\"x\":null,\"y\":true,\"z\":false}",
    " \t\r\n{\"a\":[[],{},[1,2,3]]} \n",
    "{\"n\":999999999999999,\"m\":-999999999999999,\"z\":0,\"nz\":-0}",
    "{\"a\":1,\"a\":2}",
};

static const char *const slow_bodies[] = {
    "{\"MessageBody\":\"a\\u0000b\"}",      /* U+0000 */
    "{\"MessageBody\":\"\\ud83d\\ude00\"}", /* a surrogate pair */
    "{\"MessageBody\":\"\\uDC00\"}",        /* a lone surrogate */
    "{\"MessageBody\":\"\\u12g4\"}",        /* bad hex */
    "{\"a\":1.0}",                          /* a real */
    "{\"a\":1e2}",                          /* an exponent */
    "{\"a\":01}",                           /* a leading zero */
    "{\"a\":+1}",                           /* a sign */
    "{\"a\":1234567890123456}",             /* past 15 digits */
    "\xef\xbb\xbf{\"a\":1}",                /* a byte-order mark */
    "{\"a\":\"x\ny\"}",                     /* a raw control byte in a string */
    "{\x01\"a\":1}",                        /* a control byte outside one */
};

static void sdk_bodies_take_cjson_and_the_listed_ones_jansson(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fast_bodies / sizeof *fast_bodies; i++)
        assert_false(gw__json_needs_jansson(fast_bodies[i], strlen(fast_bodies[i])));
    for (size_t i = 0; i < sizeof slow_bodies / sizeof *slow_bodies; i++)
        assert_true(gw__json_needs_jansson(slow_bodies[i], strlen(slow_bodies[i])));
    /* a NUL byte anywhere */
    assert_true(gw__json_needs_jansson("{\"a\":\"x\0y\"}", 11));
}

static void same_document_as_jansson(const char *body, size_t n)
{
    json_error_t e1, e2;
    json_t *got = gw__json_load(body, n, &e1);
    json_t *want = json_loadb(body, n, JSON_ALLOW_NUL, &e2);
    if (want == NULL) {
        assert_null(got);
        assert_string_equal(e1.text, e2.text);
        return;
    }
    assert_non_null(got);
    assert_true(json_equal(got, want));
    json_decref(got);
    json_decref(want);
}

static void both_paths_build_jansson_s_document(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof fast_bodies / sizeof *fast_bodies; i++)
        same_document_as_jansson(fast_bodies[i], strlen(fast_bodies[i]));
    for (size_t i = 0; i < sizeof slow_bodies / sizeof *slow_bodies; i++)
        same_document_as_jansson(slow_bodies[i], strlen(slow_bodies[i]));
    same_document_as_jansson("{\"a\":\"x\0y\"}", 11);
    /* a key seen twice keeps its last value, whichever parser read it */
    json_error_t e;
    json_t *doc = gw__json_load("{\"a\":1,\"a\":2}", 13, &e);
    assert_int_equal(json_integer_value(json_object_get(doc, "a")), 2);
    assert_int_equal(json_object_size(doc), 1);
    json_decref(doc);
}

static void refusals_are_jansson_s(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "",
        "   ",
        "{",
        "{\"a\":1,}",
        "[1,2,]",
        "{\"a\":1}x",
        "{\"a\":1}{}",
        "\"scalar\"",
        "42",
        "{'a':1}",
        "{a:1}",
        "{\"a\":NaN}",
        "{\"a\":\"\xc3\x28\"}",
        "{\"a\":\"\xed\xa0\x80\"}",
        "{\"\xff\":1}",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
        same_document_as_jansson(bad[i], strlen(bad[i]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sdk_bodies_take_cjson_and_the_listed_ones_jansson),
        cmocka_unit_test(both_paths_build_jansson_s_document),
        cmocka_unit_test(refusals_are_jansson_s),
    };
    return cmocka_run_group_tests_name("gw_json_load", tests, NULL, NULL);
}
