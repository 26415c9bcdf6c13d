/*
 * test_beyond.c -- sluice-load's own queue kinds (lt_beyond.c): the
 * CreateQueue bodies of a priority and an exclusive queue, and sends that
 * give each entry its priority or its key value.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "lt_int.h"

/* The StringValue of entry e's message attribute name. */
static const char *attr(json_t *e, const char *name, const char *type)
{
    json_t *a = json_object_get(json_object_get(e, "MessageAttributes"), name);
    assert_non_null(a);
    assert_string_equal(json_string_value(json_object_get(a, "DataType")), type);
    return json_string_value(json_object_get(a, "StringValue"));
}

static void priority_bodies(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    lt_beyond_body_create(&b, LT_KIND_PRIORITY, "p-0");
    json_t *j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(j, "Attributes"), "SluicePriority")),
        "true");
    json_decref(j);

    struct lt_beyond s = {.kind = LT_KIND_PRIORITY};
    sl_buf_reset(&b);
    lt_beyond_body_send(&b, &s, "http://h/t/p-0", 40, 10, 7);
    j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    json_t *entries = json_object_get(j, "Entries");
    assert_int_equal(json_array_size(entries), 10);
    char seen[10][8];
    for (size_t i = 0; i < 10; i++) {
        json_t *e = json_array_get(entries, i);
        const char *p = attr(e, "sluice.Priority", "Number");
        assert_true(atoi(p) >= 0 && atoi(p) < 1000);
        snprintf(seen[i], sizeof seen[i], "%s", p);
        assert_int_equal(json_string_length(json_object_get(e, "MessageBody")), 40);
    }
    assert_string_not_equal(seen[1], seen[2]); /* spread, not one value */
    json_decref(j);
    sl_buf_free(&b);
}

static void exclusive_bodies(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    lt_beyond_body_create(&b, LT_KIND_EXCLUSIVE, "x-0");
    json_t *j = json_loadb(b.p, b.n, 0, NULL);
    const char *key = json_string_value(
        json_object_get(json_object_get(j, "Attributes"), "SluiceExclusivityKey"));
    assert_non_null(key);
    char name[32];
    snprintf(name, sizeof name, "%s", key);
    json_decref(j);

    struct lt_beyond s = {.kind = LT_KIND_EXCLUSIVE, .keys = 3};
    sl_buf_reset(&b);
    lt_beyond_body_send(&b, &s, "u", 40, 10, 7);
    j = json_loadb(b.p, b.n, 0, NULL);
    json_t *entries = json_object_get(j, "Entries");
    for (size_t i = 0; i < 10; i++) {
        char want[8];
        snprintf(want, sizeof want, "k%zu", i % 3);
        assert_string_equal(attr(json_array_get(entries, i), name, "String"), want);
    }
    json_decref(j);
    /* a single send goes on where the batch stopped */
    sl_buf_reset(&b);
    lt_beyond_body_send(&b, &s, "u", 40, 1, 7);
    j = json_loadb(b.p, b.n, 0, NULL);
    assert_string_equal(attr(j, name, "String"), "k1");
    json_decref(j);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(priority_bodies),
        cmocka_unit_test(exclusive_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
