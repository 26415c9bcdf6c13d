/*
 * lt_beyond.c -- sluice's own queue kinds in sluice-load (--queue-kind):
 * the JSON 1.0 bodies that make a priority queue (SluicePriority) or an
 * exclusive queue (SluiceExclusivityKey), and sends to them with the
 * message attribute each needs: a priority spread over 0..999
 * (sluice.Priority, a Number), or one of N key values taken round robin.
 * What they cost against a standard queue is the benchmark of
 * docs/benchmarks.md, "Priority and exclusive queues".
 */
#include "lt_int.h"

#include <inttypes.h>
#include <string.h>

/* The exclusive queues' key attribute. */
#define LT_EXCLUSIVE_KEY "project"

void lt_beyond_body_create(struct sl_buf *b, enum lt_queue_kind kind, const char *name)
{
    sl_buf_printf(b, "{\"QueueName\":\"%s\",\"Attributes\":{", name);
    if (kind == LT_KIND_PRIORITY) {
        sl_buf_append_cstr(b, "\"SluicePriority\":\"true\"");
    } else {
        sl_buf_append_cstr(b, "\"SluiceExclusivityKey\":\"" LT_EXCLUSIVE_KEY "\"");
    }
    sl_buf_append_cstr(b, "}}");
}

/* An entry's priority or key value. */
static void beyond_fields(struct sl_buf *b, void *arg)
{
    struct lt_beyond *s = arg;
    uint64_t n = s->next++;
    if (s->kind == LT_KIND_PRIORITY) {
        /* a spread of priorities: every receive picks among many */
        sl_buf_printf(b,
                      "\"MessageAttributes\":{\"sluice.Priority\":{\"DataType\":\"Number\","
                      "\"StringValue\":\"%" PRIu64 "\"}},",
                      (n * 7919u) % 1000u);
    } else {
        sl_buf_printf(b,
                      "\"MessageAttributes\":{\"" LT_EXCLUSIVE_KEY
                      "\":{\"DataType\":\"String\",\"StringValue\":\"k%" PRIu64 "\"}},",
                      n % s->keys);
    }
}

void lt_beyond_body_send(struct sl_buf *b, struct lt_beyond *s, const char *queue_url, size_t size,
                         unsigned batch, uint64_t wall_us)
{
    lt_body_send_with(b, queue_url, size, batch, wall_us, beyond_fields, s);
}
