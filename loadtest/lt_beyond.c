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

void lt_beyond_body_send(struct sl_buf *b, struct lt_beyond *s, const char *queue_url, size_t size,
                         unsigned batch, uint64_t wall_us)
{
    /* the bodies as lt_body_send makes them, each entry given its
     * attribute ahead of its MessageBody */
    struct sl_buf plain;
    sl_buf_init(&plain);
    lt_body_send(&plain, queue_url, size, batch, wall_us);
    const char *p = plain.p;
    const char *end = plain.p + plain.n;
    const char *field = "\"MessageBody\":";
    for (const char *at; (at = strstr(p, field)) != NULL && at < end;) {
        sl_buf_append(b, p, (size_t)(at - p));
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
        sl_buf_append(b, at, strlen(field));
        p = at + strlen(field);
    }
    sl_buf_append(b, p, (size_t)(end - p));
    sl_buf_free(&plain);
}
