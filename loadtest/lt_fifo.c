/*
 * lt_fifo.c -- the FIFO side of sluice-load (--fifo-groups N): the JSON 1.0
 * bodies that make a high-throughput FIFO queue, send to it with message
 * groups and unique deduplication ids, and receive with the system
 * attributes the order check needs; and that check: within each group the
 * SequenceNumbers received must increase, one receive after another.
 *
 * A FIFO group is locked while any of its messages is in flight, and a
 * flow deletes what it received before that group can be handed out
 * again, so the generator sees a group's messages in the order the server
 * sequenced them; any decrease is a broken promise, counted, never
 * excused.
 */
#include "lt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void lt_fifo_body_create(struct sl_buf *b, const char *name)
{
    sl_buf_printf(b,
                  "{\"QueueName\":\"%s\",\"Attributes\":{\"FifoQueue\":\"true\","
                  "\"DeduplicationScope\":\"messageGroup\","
                  "\"FifoThroughputLimit\":\"perMessageGroupId\"}}",
                  name);
}

/* An entry's group, and a deduplication id no other send of this run (or
 * of an earlier run against the same server: the nonce) repeats. */
static void fifo_fields(struct sl_buf *b, void *arg)
{
    struct lt_fifo *f = arg;
    uint32_t group = (uint32_t)(f->next_group++ % f->groups);
    sl_buf_printf(b,
                  "\"MessageGroupId\":\"g%" PRIu32 "\",\"MessageDeduplicationId\":\"%" PRIx64
                  "-%" PRIu64 "\",",
                  group, f->nonce, f->next_dedup++);
}

void lt_fifo_body_send(struct sl_buf *b, struct lt_fifo *f, const char *queue_url, size_t size,
                       unsigned batch, uint64_t wall_us)
{
    lt_body_send_with(b, queue_url, size, batch, wall_us, fifo_fields, f);
}

void lt_fifo_body_receive(struct sl_buf *b, const char *queue_url, unsigned max, int wait_s)
{
    sl_buf_printf(b,
                  "{\"QueueUrl\":\"%s\",\"MaxNumberOfMessages\":%u,\"WaitTimeSeconds\":%d,"
                  "\"VisibilityTimeout\":30,"
                  "\"MessageSystemAttributeNames\":[\"MessageGroupId\",\"SequenceNumber\"]}",
                  queue_url, max, wait_s);
}

/* "g<k>" with k < groups, or -1. */
static int64_t group_index(const char *s, uint32_t groups)
{
    if (s == NULL || s[0] != 'g' || s[1] == '\0') {
        return -1;
    }
    char *end = NULL;
    unsigned long long k = strtoull(s + 1, &end, 10);
    return *end == '\0' && k < groups ? (int64_t)k : -1;
}

int lt_fifo_check(struct lt_fifo *f, struct sl_slice resp, uint64_t *checked, uint64_t *violations)
{
    json_t *root = json_loadb(resp.p, resp.n, 0, NULL);
    if (root == NULL) {
        return SL_EINVAL;
    }
    int rc = SL_OK;
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(root, "Messages"), i, m)
    {
        json_t *attrs = json_object_get(m, "Attributes");
        int64_t g =
            group_index(json_string_value(json_object_get(attrs, "MessageGroupId")), f->groups);
        const char *seq_text = json_string_value(json_object_get(attrs, "SequenceNumber"));
        if (g < 0 || seq_text == NULL) {
            rc = SL_EINVAL; /* not a message of this run's groups */
            continue;
        }
        uint64_t seq = strtoull(seq_text, NULL, 10);
        (*checked)++;
        if (seq <= f->last[g]) {
            (*violations)++;
        }
        f->last[g] = SL_MAX(f->last[g], seq);
    }
    json_decref(root);
    return rc;
}

void lt_fifo_init(struct lt_fifo *f, uint32_t groups, uint64_t nonce)
{
    *f = (struct lt_fifo){.groups = groups, .nonce = nonce};
    f->last = sl_xcalloc(groups, sizeof *f->last);
}

void lt_fifo_fini(struct lt_fifo *f)
{
    free(f->last);
    f->last = NULL;
}
