/*
 * test_fifo.c -- sluice-load's FIFO side (lt_fifo.c): the queue, send and
 * receive bodies, and the order check (a SequenceNumber that does not
 * exceed the last one received in its group is a violation).
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

static void bodies(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    lt_fifo_body_create(&b, "q-0.fifo");
    json_t *j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    json_t *a = json_object_get(j, "Attributes");
    assert_string_equal(json_string_value(json_object_get(a, "FifoQueue")), "true");
    assert_string_equal(json_string_value(json_object_get(a, "DeduplicationScope")),
                        "messageGroup");
    json_decref(j);

    struct lt_fifo f;
    lt_fifo_init(&f, 3, 0xabc);
    sl_buf_reset(&b);
    lt_fifo_body_send(&b, &f, "http://h/t/q.fifo", 40, 10, 7);
    j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    json_t *entries = json_object_get(j, "Entries");
    assert_int_equal(json_array_size(entries), 10);
    for (size_t i = 0; i < 10; i++) {
        json_t *e = json_array_get(entries, i);
        char group[8], dedup[32];
        snprintf(group, sizeof group, "g%zu", i % 3);
        snprintf(dedup, sizeof dedup, "abc-%zu", i);
        assert_string_equal(json_string_value(json_object_get(e, "MessageGroupId")), group);
        assert_string_equal(json_string_value(json_object_get(e, "MessageDeduplicationId")), dedup);
        assert_int_equal(json_string_length(json_object_get(e, "MessageBody")), 40);
    }
    json_decref(j);
    /* a single send, and the next one goes on where the batch stopped */
    sl_buf_reset(&b);
    lt_fifo_body_send(&b, &f, "u", 40, 1, 7);
    j = json_loadb(b.p, b.n, 0, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "MessageGroupId")), "g1");
    assert_string_equal(json_string_value(json_object_get(j, "MessageDeduplicationId")), "abc-10");
    json_decref(j);
    sl_buf_reset(&b);
    lt_fifo_body_receive(&b, "u", 10, 1);
    assert_non_null(strstr(b.p, "\"SequenceNumber\""));
    lt_fifo_fini(&f);
    sl_buf_free(&b);
}

static int check(struct lt_fifo *f, const char *json, uint64_t *checked, uint64_t *violations)
{
    return lt_fifo_check(f, sl_slice_cstr(json), checked, violations);
}

static void order_check(void **state)
{
    (void)state;
    struct lt_fifo f;
    lt_fifo_init(&f, 2, 1);
    uint64_t checked = 0, violations = 0;
#define MSG(g, s) "{\"Attributes\":{\"MessageGroupId\":\"" g "\",\"SequenceNumber\":\"" s "\"}}"
    assert_int_equal(check(&f,
                           "{\"Messages\":[" MSG("g0", "00000000000000000010") "," MSG(
                               "g0", "00000000000000000011") "," MSG("g1", "5") "]}",
                           &checked, &violations),
                     SL_OK);
    assert_int_equal(checked, 3);
    assert_int_equal(violations, 0);
    /* g0 going back, or repeating, is a violation; g1 going on is not */
    assert_int_equal(
        check(&f, "{\"Messages\":[" MSG("g0", "11") "," MSG("g1", "6") "]}", &checked, &violations),
        SL_OK);
    assert_int_equal(checked, 5);
    assert_int_equal(violations, 1);
    /* no messages; a foreign group; an unreadable reply */
    assert_int_equal(check(&f, "{}", &checked, &violations), SL_OK);
    assert_int_equal(check(&f, "{\"Messages\":[" MSG("g7", "1") "]}", &checked, &violations),
                     SL_EINVAL);
    assert_int_equal(check(&f, "not json", &checked, &violations), SL_EINVAL);
    assert_int_equal(checked, 5);
#undef MSG
    lt_fifo_fini(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(bodies),
        cmocka_unit_test(order_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
