/*
 * decode_bench.c -- the cost of decoding the hot SQS JSON 1.0 requests
 * (gw_sqs_decode, then the MD5s the send path stores), per request: wall
 * ns, user-space instructions (perf_event_open; repeatable on a noisy
 * machine where time is not) and heap allocations (malloc, calloc and
 * realloc counted here, libraries' calls included). Uses only gw_sqs.h,
 * so that ./run builds the same file against an older commit and reports
 * both from one run.
 *
 * Usage: decode-bench [iterations [case]]. Where the machine has no
 * hardware counters (a VM), instructions print as 0: ./run then counts
 * them with callgrind instead.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "gw_sqs.h"

/* ---- allocations: glibc's entry points, wrapped for a count ---------------- */

void *__libc_malloc(size_t n);           // NOLINT(bugprone-reserved-identifier)
void *__libc_calloc(size_t n, size_t m); // NOLINT(bugprone-reserved-identifier)
void *__libc_realloc(void *p, size_t n); // NOLINT(bugprone-reserved-identifier)

static uint64_t allocations;

void *malloc(size_t n)
{
    allocations++;
    return __libc_malloc(n);
}

void *calloc(size_t n, size_t m)
{
    allocations++;
    return __libc_calloc(n, m);
}

void *realloc(void *p, size_t n)
{
    allocations++;
    return __libc_realloc(p, n);
}

/* ---- the requests ---------------------------------------------------------- */

#define QUEUE "\"QueueUrl\":\"http://localhost:9324/acme/orders\""
#define BODY_BYTES 1024

/* A 1 KiB message as SDKs send them: a JSON document in a string, so
 * with escaped quotes. */
static void message_body(struct sl_buf *b, int k)
{
    size_t start = b->n;
    char head[96];
    int n = snprintf(head, sizeof(head), "{\\\"order\\\":%d,\\\"note\\\":\\\"", k);
    sl_buf_append(b, head, (size_t)n);
    while (b->n - start < BODY_BYTES - 4) {
        sl_buf_append_cstr(b, "lorem ipsum dolor sit amet ");
    }
    b->n = start + BODY_BYTES - 4;
    sl_buf_append_cstr(b, "\\\"}");
}

static void batch_request(struct sl_buf *b)
{
    sl_buf_append_cstr(b, "{" QUEUE ",\"Entries\":[");
    for (int i = 0; i < 10; i++) {
        char head[64];
        int n =
            snprintf(head, sizeof(head), "%s{\"Id\":\"m%d\",\"MessageBody\":\"", i ? "," : "", i);
        sl_buf_append(b, head, (size_t)n);
        message_body(b, i);
        sl_buf_append_cstr(b, "\"}");
    }
    sl_buf_append_cstr(b, "]}");
}

static void send_request(struct sl_buf *b)
{
    sl_buf_append_cstr(b, "{" QUEUE ",\"MessageBody\":\"");
    message_body(b, 1);
    sl_buf_append_cstr(b, "\",\"MessageAttributes\":{\"kind\":{\"DataType\":\"String\","
                          "\"StringValue\":\"order\"}}}");
}

static void receive_request(struct sl_buf *b)
{
    sl_buf_append_cstr(b, "{" QUEUE ",\"MaxNumberOfMessages\":10,\"WaitTimeSeconds\":20,"
                          "\"VisibilityTimeout\":30,\"MessageAttributeNames\":[\"All\"],"
                          "\"MessageSystemAttributeNames\":[\"All\"]}");
}

static void delete_batch_request(struct sl_buf *b)
{
    sl_buf_append_cstr(b, "{" QUEUE ",\"Entries\":[");
    for (int i = 0; i < 10; i++) {
        char entry[256];
        int n = snprintf(entry, sizeof(entry),
                         "%s{\"Id\":\"m%d\",\"ReceiptHandle\":\"AQEBcmVjZWlwdC1oYW5kbGUtb2YtbWVz"
                         "c2FnZS0wMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAwMDAw%02d\"}",
                         i ? "," : "", i, i);
        sl_buf_append(b, entry, (size_t)n);
    }
    sl_buf_append_cstr(b, "]}");
}

/* ---- measuring ---------------------------------------------------------------- */

static int instructions_counter(void)
{
    struct perf_event_attr attr = {
        .type = PERF_TYPE_HARDWARE,
        .size = sizeof(attr),
        .config = PERF_COUNT_HW_INSTRUCTIONS,
        .disabled = 1,
        .exclude_kernel = 1,
        .exclude_hv = 1,
    };
    return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

/* What the send path does per message besides decoding: its digests. */
static void digests(const struct gw_sqs_request *r)
{
    struct gw_sqs_digests d;
    if (r->action == GW_SQS_ACT_SEND_MESSAGE) {
        gw_sqs_digests_of(&r->u.send_message.msg, &d);
    } else if (r->action == GW_SQS_ACT_SEND_MESSAGE_BATCH) {
        for (size_t i = 0; i < r->u.send_message_batch.entry_count; i++) {
            gw_sqs_digests_of(&r->u.send_message_batch.entries[i], &d);
        }
    }
}

static void run(const char *name, enum gw_sqs_action a, const struct sl_buf *body, long iters)
{
    struct sl_slice s = {body->p, body->n};
    struct gw_sqs_request r;
    struct gw_sqs_err err;
    /* warm up, and check the request decodes */
    for (int i = 0; i < 100; i++) {
        if (gw_sqs_decode(a, s, &r, &err) != SL_OK) {
            fprintf(stderr, "%s: %s\n", name, err.message);
            exit(1);
        }
        digests(&r);
        gw_sqs_request_fini(&r);
    }
    int fd = instructions_counter();
    uint64_t allocs0 = allocations;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    if (fd >= 0) {
        ioctl(fd, PERF_EVENT_IOC_RESET, 0);
        ioctl(fd, PERF_EVENT_IOC_ENABLE, 0);
    }
    for (long i = 0; i < iters; i++) {
        (void)gw_sqs_decode(a, s, &r, &err);
        digests(&r);
        gw_sqs_request_fini(&r);
    }
    uint64_t instr = 0;
    if (fd >= 0) {
        ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
        if (read(fd, &instr, sizeof(instr)) != (ssize_t)sizeof(instr)) {
            instr = 0;
        }
        close(fd);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    uint64_t allocs = allocations - allocs0;
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%-22s %6zu bytes %10.0f ns %12.0f instructions %6.1f allocations\n", name, body->n,
           ns / (double)iters, (double)instr / (double)iters, (double)allocs / (double)iters);
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    const char *only = argc > 2 ? argv[2] : NULL;
    if (iters <= 0) {
        fprintf(stderr, "usage: decode-bench [iterations [case]]\n");
        return 2;
    }
    static const struct {
        const char *name;
        enum gw_sqs_action action;
        void (*make)(struct sl_buf *);
    } cases[] = {
        {"SendMessageBatch10x1K", GW_SQS_ACT_SEND_MESSAGE_BATCH, batch_request},
        {"SendMessage1K", GW_SQS_ACT_SEND_MESSAGE, send_request},
        {"ReceiveMessage", GW_SQS_ACT_RECEIVE_MESSAGE, receive_request},
        {"DeleteMessageBatch10", GW_SQS_ACT_DELETE_MESSAGE_BATCH, delete_batch_request},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        if (only != NULL && strcmp(only, cases[i].name) != 0) {
            continue;
        }
        struct sl_buf b;
        sl_buf_init(&b);
        cases[i].make(&b);
        run(cases[i].name, cases[i].action, &b, iters);
        sl_buf_free(&b);
    }
    return 0;
}
