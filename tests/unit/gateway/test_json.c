/*
 * test_json.c -- the reply writer (gw_text.h): string escaping per RFC 8259
 * (control characters, '"', '\\', UTF-8 passed through, invalid UTF-8
 * replaced), structure and commas, and the promise that it writes what
 * jansson's json_dumpb(JSON_COMPACT) writes, checked against jansson
 * itself on fixed and generated strings.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "gw_text.h"

/* The writer's text for one string, NUL-terminated in *b. */
static const char *quoted(struct sl_buf *b, const char *s, size_t n)
{
    sl_buf_reset(b);
    gw_json_quote(b, (struct sl_slice){s, n});
    return b->p;
}

/* jansson's text for the same string; NULL if jansson refuses it. */
static char *jansson_quoted(const char *s, size_t n)
{
    json_t *j = json_stringn(s, n);
    if (j == NULL) {
        return NULL;
    }
    char *text = json_dumps(j, JSON_COMPACT | JSON_ENCODE_ANY);
    json_decref(j);
    return text;
}

static void expect_same_as_jansson(struct sl_buf *b, const char *s, size_t n)
{
    char *want = jansson_quoted(s, n);
    assert_non_null(want);
    assert_string_equal(quoted(b, s, n), want);
    assert_int_equal(b->n, strlen(want));
    free(want);
}

static void test_escapes(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    assert_string_equal(quoted(&b, "", 0), "\"\"");
    assert_string_equal(quoted(&b, NULL, 0), "\"\"");
    assert_string_equal(quoted(&b, "plain text", 10), "\"plain text\"");
    assert_string_equal(quoted(&b, "say \"hi\"", 8), "\"say \\\"hi\\\"\"");
    assert_string_equal(quoted(&b, "a\\b", 3), "\"a\\\\b\"");
    assert_string_equal(quoted(&b, "\b\f\n\r\t", 5), "\"\\b\\f\\n\\r\\t\"");
    /* the other control characters as \u00XX, upper-case hex as jansson */
    assert_string_equal(quoted(&b, "\x01", 1), "\"\\u0001\"");
    assert_string_equal(quoted(&b, "\x1f", 1), "\"\\u001F\"");
    assert_string_equal(quoted(&b, "x\x00y", 3), "\"x\\u0000y\"");
    assert_int_equal(b.n, 10);
    assert_string_equal(quoted(&b, "\x0b\x1b", 2), "\"\\u000B\\u001B\"");
    /* not escaped: '/', DEL, printable ASCII */
    assert_string_equal(quoted(&b, "a/b\x7f~", 5), "\"a/b\x7f~\"");
    sl_buf_free(&b);
}

static void test_every_ascii_byte_matches_jansson(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    for (int c = 0; c < 0x80; c++) {
        char s[3] = {'a', (char)c, 'z'};
        expect_same_as_jansson(&b, s, sizeof s);
    }
    sl_buf_free(&b);
}

/* Plain ASCII is skipped 8 bytes at a time: a byte that needs care is
 * still seen at every offset of a longer string. */
static void test_odd_byte_at_every_offset(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    for (int c = 0; c < 256; c++) {
        for (size_t at = 0; at < 24; at++) {
            char s[24];
            memset(s, 'a', sizeof s);
            s[at] = (char)c;
            if (c < 0x80) {
                expect_same_as_jansson(&b, s, sizeof s);
                continue;
            }
            char want[32];
            memset(want, 'a', sizeof want);
            want[0] = '"';
            static const char fffd[3] = {'\xef', '\xbf', '\xbd'}; /* U+FFFD */
            memcpy(want + 1 + at, fffd, sizeof fffd);
            want[sizeof s + 3] = '"';
            quoted(&b, s, sizeof s);
            assert_int_equal(b.n, sizeof s + 4);
            assert_memory_equal(b.p, want, b.n);
        }
    }
    sl_buf_free(&b);
}

static void test_utf8_passes_through(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    static const char *const samples[] = {
        "caf\xc3\xa9",                      /* U+00E9, two bytes */
        "\xe2\x82\xac 5",                   /* U+20AC, three bytes */
        "\xf0\x9f\x98\x80!",                /* U+1F600, four bytes */
        "\xc2\x80\xdf\xbf",                 /* U+0080, U+07FF: the two-byte bounds */
        "\xe0\xa0\x80\xef\xbf\xbf",         /* U+0800, U+FFFF */
        "\xed\x9f\xbf\xee\x80\x80",         /* U+D7FF, U+E000: around the surrogates */
        "\xf0\x90\x80\x80\xf4\x8f\xbf\xbf", /* U+10000, U+10FFFF */
        "\xe2\x80\xa8\xe2\x80\xa9",         /* U+2028, U+2029: legal in JSON strings */
        "\xc3\xa9\"\n\xe2\x82\xac\\",       /* mixed with escapes */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(samples); i++) {
        struct sl_slice s = sl_slice_cstr(samples[i]);
        assert_true(gw_json_utf8_valid(s));
        expect_same_as_jansson(&b, s.p, s.n);
    }
    /* copied byte for byte */
    assert_string_equal(quoted(&b, "\xf0\x9f\x98\x80", 4), "\"\xf0\x9f\x98\x80\"");
    sl_buf_free(&b);
}

static void test_invalid_utf8_is_replaced(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    static const struct {
        const char *in;
        size_t n;
        const char *out;
    } cases[] = {
        {"a\x80z", 3, "\"a\xef\xbf\xbdz\""},             /* lone continuation byte */
        {"a\xc3", 2, "\"a\xef\xbf\xbd\""},               /* cut before its end */
        {"\xc0\xaf", 2, "\"\xef\xbf\xbd\xef\xbf\xbd\""}, /* overlong '/' */
        {"\xe0\x80\xaf", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* overlong */
        {"\xed\xa0\x80", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* surrogate */
        {"\xed\xbf\xbf", 3, "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* last one */
        {"\xf4\x90\x80\x80", 4,
         "\"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\""}, /* above U+10FFFF */
        {"\xf5!", 2, "\"\xef\xbf\xbd!\""},                        /* no such lead */
        {"\xc3\xa9\xff\"", 4, "\"\xc3\xa9\xef\xbf\xbd\\\"\""},    /* valid, bad, escape */
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(cases); i++) {
        struct sl_slice s = {cases[i].in, cases[i].n};
        assert_false(gw_json_utf8_valid(s));
        assert_null(json_stringn(s.p, s.n)); /* jansson refuses these too */
        assert_string_equal(quoted(&b, s.p, s.n), cases[i].out);
        /* what the writer made is valid UTF-8 and valid JSON */
        json_t *back = json_loads(b.p, JSON_DECODE_ANY, NULL);
        assert_non_null(back);
        json_decref(back);
    }
    sl_buf_free(&b);
}

/* xorshift: the same strings on every run */
static uint32_t next_random(uint32_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 17;
    *s ^= *s << 5;
    return *s;
}

static void test_generated_strings_match_jansson(void **state)
{
    (void)state;
    static const char *const pieces[] = {
        "a",
        "Z",
        " ",
        "\"",
        "\\",
        "/",
        "\n",
        "\t",
        "\x01",
        "\x1f",
        "\x7f",
        "\xc3\xa9",
        "\xe2\x82\xac",
        "\xf0\x9f\x98\x80",
        "\xef\xbf\xbd",
        "xxxxxxxxxxxxxxxx",
    };
    struct sl_buf b, s;
    sl_buf_init(&b);
    sl_buf_init(&s);
    uint32_t seed = 0x2545f491u;
    for (int round = 0; round < 2000; round++) {
        sl_buf_reset(&s);
        int count = (int)(next_random(&seed) % 24);
        for (int k = 0; k < count; k++) {
            sl_buf_append_cstr(&s, pieces[next_random(&seed) % SL_ARRAY_LEN(pieces)]);
        }
        expect_same_as_jansson(&b, s.p != NULL ? s.p : "", s.n);
    }
    /* random bytes: the writer and jansson agree on what is valid UTF-8 */
    for (int round = 0; round < 5000; round++) {
        uint8_t bytes[6];
        size_t n = 1 + next_random(&seed) % sizeof bytes;
        for (size_t k = 0; k < n; k++) {
            bytes[k] = (uint8_t)next_random(&seed);
        }
        struct sl_slice raw = {(const char *)bytes, n};
        json_t *j = json_stringn(raw.p, raw.n);
        assert_int_equal(gw_json_utf8_valid(raw), j != NULL);
        if (j != NULL) {
            expect_same_as_jansson(&b, raw.p, raw.n);
        } else {
            quoted(&b, raw.p, raw.n);
            assert_true(gw_json_utf8_valid((struct sl_slice){b.p, b.n}));
        }
        json_decref(j);
    }
    sl_buf_free(&s);
    sl_buf_free(&b);
}

static void test_structure(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    struct gw_json w;
    gw_json_init(&w, &b);
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "a");
    gw_json_array_begin(&w);
    gw_json_int(&w, 1);
    gw_json_int(&w, -42);
    gw_json_int(&w, INT64_MIN);
    gw_json_bool(&w, true);
    gw_json_bool(&w, false);
    gw_json_object_begin(&w);
    gw_json_object_end(&w);
    gw_json_array_begin(&w);
    gw_json_array_end(&w);
    gw_json_cstr(&w, "s");
    gw_json_array_end(&w);
    gw_json_key(&w, SL_SLICE_LIT("k\"ey"));
    gw_json_object_begin(&w);
    gw_json_key_lit(&w, "x");
    gw_json_string(&w, SL_SLICE_LIT("y"));
    gw_json_key_lit(&w, "bin");
    gw_json_base64(&w, (struct sl_slice){"\x00\x01\xff", 3});
    gw_json_key_lit(&w, "empty");
    gw_json_base64(&w, (struct sl_slice){NULL, 0});
    gw_json_object_end(&w);
    gw_json_object_end(&w);
    assert_string_equal(b.p, "{\"a\":[1,-42,-9223372036854775808,true,false,{},[],\"s\"],"
                             "\"k\\\"ey\":{\"x\":\"y\",\"bin\":\"AAH/\",\"empty\":\"\"}}");
    assert_int_equal(b.n, strlen(b.p));

    /* the writer appends: what the buffer held stays */
    sl_buf_reset(&b);
    sl_buf_append_cstr(&b, "pre:");
    gw_json_init(&w, &b);
    gw_json_array_begin(&w);
    gw_json_array_end(&w);
    assert_string_equal(b.p, "pre:[]");
    sl_buf_free(&b);
}

static void test_jansson_values(void **state)
{
    (void)state;
    json_t *tree = json_pack("{s:s, s:[i, b, n, {}, []], s:{s:s%, s:I}, s:s}", "z", "first", "list",
                             7, 1, "nested", "k", "a\0b", (size_t)3, "big",
                             (json_int_t)-123456789012345, "\xc3\xa9\n", "\"q\"");
    assert_non_null(tree);
    char *want = json_dumps(tree, JSON_COMPACT);
    struct sl_buf b;
    sl_buf_init(&b);
    struct gw_json w;
    gw_json_init(&w, &b);
    assert_true(gw_json_value(&w, tree));
    assert_string_equal(b.p, want); /* insertion order, as jansson dumps */
    free(want);

    /* a real: nothing is written, and the writer goes on as before */
    json_t *with_real = json_pack("{s:s, s:f}", "a", "b", "r", 1.5);
    sl_buf_reset(&b);
    gw_json_init(&w, &b);
    gw_json_array_begin(&w);
    gw_json_int(&w, 1);
    size_t before = b.n;
    assert_false(gw_json_value(&w, with_real));
    assert_int_equal(b.n, before);
    gw_json_int(&w, 2);
    gw_json_array_end(&w);
    assert_string_equal(b.p, "[1,2]");
    json_decref(with_real);
    json_decref(tree);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_escapes),
        cmocka_unit_test(test_every_ascii_byte_matches_jansson),
        cmocka_unit_test(test_odd_byte_at_every_offset),
        cmocka_unit_test(test_utf8_passes_through),
        cmocka_unit_test(test_invalid_utf8_is_replaced),
        cmocka_unit_test(test_generated_strings_match_jansson),
        cmocka_unit_test(test_structure),
        cmocka_unit_test(test_jansson_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
