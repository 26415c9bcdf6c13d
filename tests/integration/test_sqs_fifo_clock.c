/*
 * test_sqs_fifo_clock.c -- FIFO's five minutes end to end, with the real
 * sluiced's wall clock moved by Debian's libfaketime instead of a
 * five-minute sleep: a send repeated at +299 s is a duplicate (the first
 * send's MessageId and SequenceNumber, nothing stored) and at +301 s a
 * new message; a ReceiveRequestAttemptId retried at +299 s replays, at
 * +301 s it is an ordinary receive.
 *
 * sluiced runs with libfaketime preloaded, reading its offset from a file
 * this test rewrites (FAKETIME_TIMESTAMP_FILE, re-read on every call with
 * FAKETIME_NO_CACHE). Only the wall clock moves (FAKETIME_DONT_FAKE_
 * MONOTONIC): the engine's message clock (part__now: sl_wall_ms, i.e.
 * CLOCK_REALTIME) jumps, while libuv's timers and the writers' waits
 * keep the monotonic clock. SigV4 compares the request's date with the
 * wall clock; the offsets stay well within its 15 minutes.
 *
 * Skipped (exit 77, ctest's SKIP_RETURN_CODE) when libfaketime is not
 * installed, and under ThreadSanitizer. AddressSanitizer refuses to start
 * when a preloaded library comes before its runtime; its
 * verify_asan_link_order=0 lets it start, and since ASan passes
 * clock_gettime through, libfaketime still moves the clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_sqs.h"

#define FAKETIME_LIB "/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"
#define SKIP 77

#if defined(__SANITIZE_ADDRESS__)
#    define ASAN 1
#elif defined(__SANITIZE_THREAD__)
#    define TSAN 1
#elif defined(__has_feature)
#    if __has_feature(address_sanitizer)
#        define ASAN 1
#    elif __has_feature(thread_sanitizer)
#        define TSAN 1
#    endif
#endif

static struct it_server srv;
static char clock_path[64];

/* Sets sluiced's clock offset ("+299s"), atomically: libfaketime reads the
 * file on every clock call and must never see it half written. */
static void set_offset(const char *offset)
{
    char tmp[80];
    snprintf(tmp, sizeof tmp, "%s.new", clock_path);
    FILE *f = fopen(tmp, "w");
    IT_REQUIRE(f != NULL);
    fprintf(f, "%s\n", offset);
    IT_REQUIRE(fclose(f) == 0);
    IT_REQUIRE(rename(tmp, clock_path) == 0);
}

static struct it_reply send_d1(const char *url, const char *body)
{
    struct it_reply r = it_call(&srv, "SendMessage",
                                json_pack("{s:s,s:s,s:s,s:s}", "QueueUrl", url, "MessageBody", body,
                                          "MessageGroupId", "g", "MessageDeduplicationId", "d1"));
    IT_OK(&r);
    return r;
}

static struct it_reply receive_five(const char *url)
{
    struct it_reply r = it_receive(&srv, url,
                                   json_pack("{s:i,s:i,s:s,s:[s]}", "MaxNumberOfMessages", 10,
                                             "VisibilityTimeout", 3600, "ReceiveRequestAttemptId",
                                             "five", "MessageSystemAttributeNames", "All"));
    IT_OK(&r);
    return r;
}

static long long stored(const char *url)
{
    return it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") +
           it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible");
}

static void five_minutes(void)
{
    set_offset("+0");
    char *url = it_create_queue(&srv, "clock.fifo", json_pack("{s:s}", "FifoQueue", "true"));
    IT_REQUIRE(url != NULL);
    struct it_reply first = send_d1(url, "one");
    struct it_reply held = receive_five(url);
    IT_REQUIRE(it_message_count(&held) == 1);
    const char *handle = it_jstr(json_array_get(it_messages(&held), 0), "ReceiptHandle");

    set_offset("+299s");
    struct it_reply dup = send_d1(url, "one again");
    IT_STREQ(it_str(&dup, "MessageId"), it_str(&first, "MessageId"));
    IT_STREQ(it_str(&dup, "SequenceNumber"), it_str(&first, "SequenceNumber"));
    IT_CHECK(stored(url) == 1);
    struct it_reply replay = receive_five(url);
    IT_CHECK(it_message_count(&replay) == 1);
    IT_STREQ(it_jstr(json_array_get(it_messages(&replay), 0), "ReceiptHandle"), handle);
    it_reply_free(&replay);
    it_reply_free(&dup);

    set_offset("+301s");
    long long before_ms = it_now_ms();
    struct it_reply anew = send_d1(url, "one more");
    IT_CHECK(strcmp(it_str(&anew, "MessageId"), it_str(&first, "MessageId")) != 0);
    IT_CHECK(strcmp(it_str(&anew, "SequenceNumber"), it_str(&first, "SequenceNumber")) > 0);
    IT_CHECK(stored(url) == 2);
    /* an ordinary receive: group g is held by "one" (the replay's hour) */
    replay = receive_five(url);
    IT_CHECK(it_message_count(&replay) == 0);
    it_reply_free(&replay);
    /* sluiced's clock did move (else the checks above prove nothing): a
     * message sent now is stamped 301 s ahead */
    struct it_reply other =
        it_call(&srv, "SendMessage",
                json_pack("{s:s,s:s,s:s,s:s}", "QueueUrl", url, "MessageBody", "other",
                          "MessageGroupId", "h", "MessageDeduplicationId", "d2"));
    IT_OK(&other);
    it_reply_free(&other);
    struct it_reply late =
        it_receive(&srv, url, json_pack("{s:[s]}", "MessageSystemAttributeNames", "All"));
    IT_REQUIRE(it_message_count(&late) == 1);
    const char *sent = it_jstr(json_object_get(json_array_get(it_messages(&late), 0), "Attributes"),
                               "SentTimestamp");
    IT_CHECK(sent != NULL && atoll(sent) >= before_ms + 301 * 1000LL);
    it_reply_free(&late);
    it_reply_free(&anew);
    it_reply_free(&held);
    it_reply_free(&first);
    free(url);
}

int main(void)
{
#ifdef TSAN
    printf("SKIP: libfaketime under ThreadSanitizer is not supported here\n");
    return SKIP;
#endif
    if (access(FAKETIME_LIB, R_OK) != 0) {
        printf("SKIP: %s is not installed (scripts/setup installs libfaketime)\n", FAKETIME_LIB);
        return SKIP;
    }
    snprintf(clock_path, sizeof clock_path, "/tmp/sluice-clock-XXXXXX");
    int fd = mkstemp(clock_path);
    IT_REQUIRE(fd >= 0);
    close(fd);
    char file_env[96];
    snprintf(file_env, sizeof file_env, "FAKETIME_TIMESTAMP_FILE=%s", clock_path);
    char asan_env[512] = "";
#ifdef ASAN
    const char *asan = getenv("ASAN_OPTIONS");
    snprintf(asan_env, sizeof asan_env, "ASAN_OPTIONS=%s%sverify_asan_link_order=0",
             asan != NULL ? asan : "", asan != NULL && *asan != '\0' ? ":" : "");
#endif
    const char *preload = "LD_PRELOAD=" FAKETIME_LIB;
    const char *const env[] = {preload,
                               "FAKETIME_DONT_FAKE_MONOTONIC=1",
                               file_env,
                               "FAKETIME_NO_CACHE=1",
                               asan_env[0] != '\0' ? asan_env : NULL,
                               NULL};
    set_offset("+0");
    struct it_options opt = {.tls = false, .env = env};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    five_minutes();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    unlink(clock_path);
    return it_summary();
}
