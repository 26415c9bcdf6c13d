/*
 * test_fifo.c -- the gateway's FIFO rules of a send (gw_act_fifo.c: SQS's
 * errors and texts, content-based deduplication ids, SequenceNumber text).
 * (ReceiveRequestAttemptId replays live in the partitions: see
 * tests/unit/partitions/test_part_attempts.c.)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "gw_act_fifo.h"

static struct gw_sqs_send_entry entry(const char *group, const char *dedup)
{
    struct gw_sqs_send_entry e = {.body = SL_SLICE_LIT("body")};
    if (group != NULL) {
        e.has_group_id = true;
        e.group_id = sl_slice_cstr(group);
    }
    if (dedup != NULL) {
        e.has_dedup_id = true;
        e.dedup_id = sl_slice_cstr(dedup);
    }
    return e;
}

static void expect_err(const struct part_queue_config *cfg, const struct gw_sqs_send_entry *e,
                       size_t n, enum gw_sqs_error code, const char *message)
{
    struct gw_sqs_err err;
    assert_int_equal(gw__fifo_check(cfg, e, n, &err), SL_EINVAL);
    assert_int_equal(err.code, code);
    assert_string_equal(err.message, message);
}

static void test_fifo_send_rules(void **state)
{
    (void)state;
    struct part_queue_config fifo = part_queue_config_default();
    fifo.fifo = true;
    struct gw_sqs_err err;
    struct gw_sqs_send_entry ok = entry("g", "d");
    assert_int_equal(gw__fifo_check(&fifo, &ok, 1, &err), SL_OK);

    struct gw_sqs_send_entry e = entry(NULL, "d");
    expect_err(&fifo, &e, 1, GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter MessageGroupId.");
    e = entry("g", NULL);
    expect_err(&fifo, &e, 1, GW_SQS_E_INVALID_PARAMETER_VALUE,
               "The queue should either have ContentBasedDeduplication enabled or "
               "MessageDeduplicationId provided explicitly");
    fifo.content_based_dedup = true;
    assert_int_equal(gw__fifo_check(&fifo, &e, 1, &err), SL_OK);
    e = entry("g", "d");
    e.has_delay_seconds = true;
    e.delay_seconds = 0;
    assert_int_equal(gw__fifo_check(&fifo, &e, 1, &err), SL_OK);
    e.delay_seconds = 5;
    expect_err(&fifo, &e, 1, GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value 5 for parameter DelaySeconds is invalid. Reason: The request include "
               "parameter that is not valid for this queue type.");
    /* one bad entry refuses the batch; an entry that failed decoding is
     * not looked at again */
    struct gw_sqs_send_entry batch[3] = {entry("g", "1"), entry(NULL, "2"), entry("g", "3")};
    expect_err(&fifo, batch, 3, GW_SQS_E_MISSING_PARAMETER,
               "The request must contain the parameter MessageGroupId.");
    struct gw_sqs_err decode_fail;
    batch[1].fail = &decode_fail;
    assert_int_equal(gw__fifo_check(&fifo, batch, 3, &err), SL_OK);

    struct part_queue_config std = part_queue_config_default();
    e = entry("g", NULL); /* a group on a standard queue: fair queues */
    assert_int_equal(gw__fifo_check(&std, &e, 1, &err), SL_OK);
    e = entry(NULL, "abc");
    expect_err(&std, &e, 1, GW_SQS_E_INVALID_PARAMETER_VALUE,
               "Value abc for parameter MessageDeduplicationId is invalid. Reason: The request "
               "include parameter that is not valid for this queue type.");
}

static void test_dedup_id_and_sequence_text(void **state)
{
    (void)state;
    char hex[65];
    struct gw_sqs_send_entry e = entry("g", "mine");
    struct sl_slice id = gw__fifo_dedup_id(&e, hex);
    assert_true(sl_slice_eq_cstr(id, "mine"));
    e = entry("g", NULL);
    e.body = SL_SLICE_LIT("same body");
    id = gw__fifo_dedup_id(&e, hex);
    assert_true(
        sl_slice_eq_cstr(id, "8f6372a8b1509601faa57ff3a292cfcccb95aa2325c18b8e50b0c035ea1648fe"));
    e.body = (struct sl_slice){NULL, 0};
    id = gw__fifo_dedup_id(&e, hex); /* sha256("") */
    assert_true(
        sl_slice_eq_cstr(id, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));

    char a[GW_FIFO_SEQ_LEN + 1], b[GW_FIFO_SEQ_LEN + 1];
    gw__fifo_seq_text(1764201234567890ull, a);
    assert_string_equal(a, "00001764201234567890");
    gw__fifo_seq_text(UINT64_MAX, b);
    assert_string_equal(b, "18446744073709551615");
    assert_true(strcmp(a, b) < 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fifo_send_rules),
        cmocka_unit_test(test_dedup_id_and_sequence_text),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
