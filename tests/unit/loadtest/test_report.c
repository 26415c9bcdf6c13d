/*
 * test_report.c -- the JSON record's shape and numbers (and the noisy
 * scenario's merged quiet tenants, its --only split, and --arrivals), SQS error codes
 * out of replies, the command line's refusals, and message bodies.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "lt_int.h"

static int parse(struct lt_opts *o, const char *const *args, int n, char *err)
{
    char *argv[32];
    argv[0] = "sluice-load";
    for (int i = 0; i < n; i++) {
        argv[i + 1] = (char *)args[i];
    }
    lt_opts_init(o);
    return lt_opts_parse(o, n + 1, argv, err, 256);
}

static void json_record_shape(void **state)
{
    struct lt_opts o;
    char err[256];
    const char *args[] = {"roundtrip", "-d", "2", "--rate", "100", "--batch", "10"};
    assert_int_equal(parse(&o, args, 7, err), SL_OK);
    struct lt_group_stats groups[2];
    lt_group_stats_init(&groups[0], "producers", "default");
    lt_group_stats_init(&groups[1], "consumers", "default");
    groups[0].target_rate = 100;
    groups[0].elapsed_s = 2.0;
    groups[0].requests = 200;
    groups[0].messages = 2000;
    groups[1].elapsed_s = 2.0;
    groups[1].requests = 410;
    groups[1].errors = 3;
    groups[1].messages = 1990;
    lt_errors_add(&groups[1].error_codes, "RequestThrottled");
    lt_errors_add(&groups[1].error_codes, "RequestThrottled");
    lt_errors_add(&groups[1].error_codes, "transport:ConnectionClosed");
    for (uint64_t v = 1; v <= 1000; v++) {
        lt_group_stats_record(&groups[0], LT_M_SEND, v);
        lt_group_stats_record(&groups[1], LT_M_E2E, 2 * v);
    }
    lt_group_stats_tick(&groups[0], 1.0);
    struct lt_result r = {.opts = &o,
                          .elapsed_s = 2.5,
                          .groups = groups,
                          .group_count = 2,
                          .have_cpu = true,
                          .server_pid = 42,
                          .server_cpu_s = 0.5};
    json_t *j = lt_result_json(&r);
    assert_string_equal(json_string_value(json_object_get(j, "tool")), "sluice-load");
    assert_string_equal(json_string_value(json_object_get(j, "scenario")), "roundtrip");
    assert_true(json_is_null(json_object_get(j, "setup_error")));
    json_t *cfg = json_object_get(j, "config");
    assert_string_equal(json_string_value(json_object_get(cfg, "mode")), "open");
    assert_int_equal(json_integer_value(json_object_get(cfg, "batch")), 10);
    json_t *totals = json_object_get(j, "totals");
    assert_int_equal(json_integer_value(json_object_get(totals, "requests")), 610);
    /* a round trip counts consumed messages only */
    assert_int_equal(json_integer_value(json_object_get(totals, "messages")), 1990);
    assert_true(json_real_value(json_object_get(totals, "messages_per_s")) == 995.0);
    json_t *cpu = json_object_get(j, "server_cpu");
    assert_true(json_real_value(json_object_get(cpu, "us_per_message")) > 251.25 &&
                json_real_value(json_object_get(cpu, "us_per_message")) < 251.26);
    json_t *g0 = json_array_get(json_object_get(j, "groups"), 0);
    json_t *g1 = json_array_get(json_object_get(j, "groups"), 1);
    assert_string_equal(json_string_value(json_object_get(g0, "mode")), "open");
    json_t *send = json_object_get(json_object_get(g0, "latency_us"), "send");
    assert_int_equal(json_integer_value(json_object_get(send, "count")), 1000);
    assert_int_equal(json_integer_value(json_object_get(send, "p50")), 500);
    assert_int_equal(json_integer_value(json_object_get(send, "p99_9")), 999);
    assert_int_equal(json_integer_value(json_object_get(send, "max")), 1000);
    assert_null(json_object_get(json_object_get(g0, "latency_us"), "e2e"));
    json_t *tl = json_object_get(json_object_get(g0, "timeline"), "send");
    assert_int_equal(json_array_size(tl), 1);
    assert_int_equal(json_integer_value(json_array_get(json_array_get(tl, 0), 1)), 1000);
    json_t *codes = json_object_get(g1, "errors_by_code");
    assert_int_equal(json_integer_value(json_object_get(codes, "RequestThrottled")), 2);
    assert_int_equal(json_integer_value(json_object_get(codes, "transport:ConnectionClosed")), 1);
    json_t *e2e = json_object_get(json_object_get(g1, "latency_us"), "e2e");
    /* rank 990 is 1980, in the bucket [1980, 1981]: reported as its high end */
    assert_int_equal(json_integer_value(json_object_get(e2e, "p99")), 1981);

    /* what is written to disk parses back to the same thing */
    char path[] = "/tmp/lt-json-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(lt_result_write_json(&r, path), SL_OK);
    json_t *back = json_load_file(path, 0, NULL);
    unlink(path);
    assert_non_null(back);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(back, "totals"), "messages")), 1990);
    assert_int_equal(json_array_size(json_object_get(back, "groups")), 2);
    json_decref(back);
    json_decref(j);
    lt_group_stats_fini(&groups[0]);
    lt_group_stats_fini(&groups[1]);
    lt_opts_fini(&o);
}

static void noisy_merges_quiet_tenants(void **state)
{
    struct lt_opts o;
    char err[256];
    const char *args[] = {"noisy", "-d", "2", "--rate", "50", "--tenants", "f:x,a:y,b:z"};
    assert_int_equal(parse(&o, args, 7, err), SL_OK);
    static const struct {
        const char *name, *role;
        uint64_t messages;
    } layout[] = {
        {"flood:f/send", "send", 100}, {"flood:f/recv", "receive-delete", 90},
        {"quiet:a/send", "send", 10},  {"quiet:a/recv", "receive-delete", 10},
        {"quiet:b/send", "send", 20},  {"quiet:b/recv", "receive-delete", 20},
    };
    struct lt_group_stats groups[6];
    for (size_t i = 0; i < 6; i++) {
        lt_group_stats_init(&groups[i], layout[i].name, "t");
        snprintf(groups[i].role, sizeof(groups[i].role), "%s", layout[i].role);
        groups[i].messages = layout[i].messages;
        groups[i].elapsed_s = 2.0;
    }
    /* quiet a sends 1..100 us, quiet b 101..200 us: the merged median is
     * 100, which neither tenant's own median is; the flooder's 10 ms stays
     * out of it. */
    for (uint64_t v = 1; v <= 100; v++) {
        lt_group_stats_record(&groups[2], LT_M_SEND, v);
        lt_group_stats_record(&groups[4], LT_M_SEND, 100 + v);
        lt_group_stats_record(&groups[0], LT_M_SEND, 10000);
    }
    lt_group_stats_record(&groups[3], LT_M_RECEIVE, 7);
    lt_errors_add(&groups[0].error_codes, "RequestThrottled");
    lt_errors_add(&groups[3].error_codes, "RequestThrottled");
    lt_errors_add(&groups[5].error_codes, "RequestThrottled");
    lt_errors_add(&groups[5].error_codes, "OverLimit");
    struct lt_result r = {.opts = &o, .elapsed_s = 2, .groups = groups, .group_count = 6};
    json_t *j = lt_result_json(&r);
    /* totals count sent messages once, not also their deletes */
    assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "totals"), "messages")),
                     130);
    assert_true(json_real_value(json_object_get(json_object_get(j, "config"), "receive_rate")) ==
                50.0);
    json_t *g2 = json_array_get(json_object_get(j, "groups"), 2);
    assert_string_equal(json_string_value(json_object_get(g2, "role")), "send");
    json_t *qs = json_object_get(json_object_get(j, "quiet"), "send");
    json_t *qr = json_object_get(json_object_get(j, "quiet"), "receive-delete");
    assert_int_equal(json_integer_value(json_object_get(qs, "groups")), 2);
    json_t *send = json_object_get(json_object_get(qs, "latency_us"), "send");
    assert_int_equal(json_integer_value(json_object_get(send, "count")), 200);
    assert_int_equal(json_integer_value(json_object_get(send, "p50")), 100);
    assert_int_equal(json_integer_value(json_object_get(send, "min")), 1);
    assert_int_equal(json_integer_value(json_object_get(send, "max")), 200);
    assert_null(json_object_get(json_object_get(qs, "errors_by_code"), "RequestThrottled"));
    json_t *codes = json_object_get(qr, "errors_by_code");
    assert_int_equal(json_integer_value(json_object_get(codes, "RequestThrottled")), 2);
    assert_int_equal(json_integer_value(json_object_get(codes, "OverLimit")), 1);
    json_t *recv = json_object_get(json_object_get(qr, "latency_us"), "receive");
    assert_int_equal(json_integer_value(json_object_get(recv, "count")), 1);
    json_decref(j);
    for (size_t i = 0; i < 6; i++) {
        lt_group_stats_fini(&groups[i]);
    }
    lt_opts_fini(&o);
}

/* The command line args is refused with a message that contains why. */
static void assert_refused(const char *const *args, int n, const char *why)
{
    struct lt_opts o;
    char err[256];
    assert_int_equal(parse(&o, args, n, err), SL_EINVAL);
    assert_non_null(strstr(err, why));
    lt_opts_fini(&o);
}

/* noisy over the tenants h, a, b, with --only part unless part is NULL. */
static int parse_noisy_only(struct lt_opts *o, const char *part, char *err)
{
    const char *args[] = {"noisy",     "-d",          "1",      "--rate", "5",
                          "--tenants", "h:x,a:y,b:z", "--only", part};
    return parse(o, args, part != NULL ? 9 : 7, err);
}

/* --only splits noisy's tenants over two processes given the same list:
 * the first one floods, the rest are quiet, whichever process runs them. */
static void noisy_only_splits_tenants(void **state)
{
    static const struct {
        const char *part;
        enum lt_noisy_part only;
        bool drives[3];
    } cases[] = {
        {NULL, LT_NOISY_BOTH, {true, true, true}},
        {"both", LT_NOISY_BOTH, {true, true, true}},
        {"flood", LT_NOISY_FLOOD, {true, false, false}},
        {"quiet", LT_NOISY_QUIET, {false, true, true}},
    };
    struct lt_opts o;
    char err[256];
    for (size_t c = 0; c < SL_ARRAY_LEN(cases); c++) {
        assert_int_equal(parse_noisy_only(&o, cases[c].part, err), SL_OK);
        assert_int_equal(o.only, cases[c].only);
        for (size_t i = 0; i < 3; i++) {
            assert_int_equal(lt_opts_drives_tenant(&o, i), cases[c].drives[i]);
        }
        lt_opts_fini(&o);
    }
    const char *bad[] = {"noisy",     "-d",      "1",      "--rate", "5",
                         "--tenants", "h:x,a:y", "--only", "hog"};
    assert_refused(bad, 9, "--only is flood, quiet or both, not 'hog'");
    const char *elsewhere[] = {"send", "-d", "1", "--only", "flood"};
    assert_refused(elsewhere, 5, "--only is for the noisy scenario");
    const char *missing[] = {"noisy", "-d", "1", "--rate", "5", "--only"};
    assert_refused(missing, 6, "missing value");
}

/* --arrivals: staggered unless asked for lockstep; the record says which. */
static void arrivals_option(void **state)
{
    (void)state;
    static const struct {
        const char *value;
        bool lockstep;
        const char *recorded;
    } cases[] = {{NULL, false, "staggered"},
                 {"staggered", false, "staggered"},
                 {"lockstep", true, "lockstep"}};
    for (size_t c = 0; c < SL_ARRAY_LEN(cases); c++) {
        const char *args[] = {"send", "-d", "1", "--rate", "5", "--arrivals", cases[c].value};
        struct lt_opts o;
        char err[256];
        assert_int_equal(parse(&o, args, cases[c].value != NULL ? 7 : 5, err), SL_OK);
        assert_int_equal(o.lockstep, cases[c].lockstep);
        struct lt_result r = {.opts = &o, .elapsed_s = 1};
        json_t *j = lt_result_json(&r);
        assert_string_equal(
            json_string_value(json_object_get(json_object_get(j, "config"), "arrivals")),
            cases[c].recorded);
        json_decref(j);
        lt_opts_fini(&o);
    }
    const char *bad[] = {"send", "-d", "1", "--arrivals", "poisson"};
    assert_refused(bad, 5, "--arrivals is staggered or lockstep");
}

/* The flooder's process has no quiet section; the quiet tenants' process
 * keeps theirs; both records say which part they ran. */
static void noisy_only_records(void **state)
{
    struct lt_opts o;
    char err[256];
    struct lt_group_stats g[2];
    lt_group_stats_init(&g[0], "flood:h/send", "h");
    lt_group_stats_init(&g[1], "flood:h/recv", "h");
    snprintf(g[0].role, sizeof(g[0].role), "send");
    snprintf(g[1].role, sizeof(g[1].role), "receive-delete");
    struct lt_result r = {.opts = &o, .elapsed_s = 1, .groups = g, .group_count = 2};
    assert_int_equal(parse_noisy_only(&o, "flood", err), SL_OK);
    json_t *j = lt_result_json(&r);
    assert_null(json_object_get(j, "quiet"));
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "config"), "only")),
                        "flood");
    json_decref(j);
    lt_opts_fini(&o);

    snprintf(g[0].name, sizeof(g[0].name), "quiet:a/send");
    snprintf(g[1].name, sizeof(g[1].name), "quiet:a/recv");
    lt_group_stats_record(&g[0], LT_M_SEND, 42);
    assert_int_equal(parse_noisy_only(&o, "quiet", err), SL_OK);
    j = lt_result_json(&r);
    json_t *qs = json_object_get(json_object_get(j, "quiet"), "send");
    assert_int_equal(json_integer_value(json_object_get(qs, "groups")), 1);
    json_t *send = json_object_get(json_object_get(qs, "latency_us"), "send");
    assert_int_equal(json_integer_value(json_object_get(send, "max")), 42);
    assert_string_equal(json_string_value(json_object_get(json_object_get(j, "config"), "only")),
                        "quiet");
    json_decref(j);
    lt_opts_fini(&o);
    lt_group_stats_fini(&g[0]);
    lt_group_stats_fini(&g[1]);
}

static void error_codes(void **state)
{
    char code[LT_ERROR_CODE_MAX];
    lt_error_code(400, "AWS.SimpleQueueService.NonExistentQueue;Sender",
                  sl_slice_cstr("{\"__type\":\"com.amazonaws.sqs#QueueDoesNotExist\","
                                "\"message\":\"The specified queue does not exist.\"}"),
                  code, sizeof(code));
    assert_string_equal(code, "QueueDoesNotExist");
    lt_error_code(403, "RequestThrottled;Sender", sl_slice_cstr("not json"), code, sizeof(code));
    assert_string_equal(code, "RequestThrottled");
    lt_error_code(502, "", (struct sl_slice){"", 0}, code, sizeof(code));
    assert_string_equal(code, "HTTP_502");
    lt_error_code(0, "", sl_slice_cstr("ConnectionClosed"), code, sizeof(code));
    assert_string_equal(code, "transport:ConnectionClosed");

    struct lt_errors e = {0};
    char name[16];
    for (int i = 0; i < LT_MAX_ERROR_CODES + 3; i++) {
        snprintf(name, sizeof(name), "E%d", i);
        lt_errors_add(&e, name);
    }
    lt_errors_add(&e, "E0");
    assert_int_equal(e.n, LT_MAX_ERROR_CODES);
    assert_int_equal(e.other, 3);
    assert_int_equal(e.e[0].n, 2);
    assert_int_equal(lt_errors_total(&e), LT_MAX_ERROR_CODES + 4);
}

static void command_line_refusals(void **state)
{
    struct lt_opts o;
    char err[256];
    const char *unbounded[] = {"send"};
    assert_int_equal(parse(&o, unbounded, 1, err), SL_EINVAL);
    assert_non_null(strstr(err, "unbounded"));
    lt_opts_fini(&o);
    const char *remote[] = {"send", "-n", "10", "--target", "10.1.2.3:9324"};
    assert_int_equal(parse(&o, remote, 5, err), SL_EINVAL);
    assert_non_null(strstr(err, "loopback"));
    lt_opts_fini(&o);
    const char *noisy[] = {"noisy", "-d", "1", "--rate", "50", "--tenants", "a:x,b:y,c:z"};
    assert_int_equal(parse(&o, noisy, 7, err), SL_OK);
    assert_int_equal(o.tenant_count, 3);
    assert_string_equal(o.tenants[2].access_key_id, "c");
    assert_string_equal(o.tenants[2].secret, "z");
    assert_true(o.flood_rate == 500.0);
    assert_true(o.receive_rate == 50.0);
    lt_opts_fini(&o);
    const char *noisy_rr[] = {"noisy",          "-d", "1",         "--rate", "50",
                              "--receive-rate", "20", "--tenants", "a:x,b:y"};
    assert_int_equal(parse(&o, noisy_rr, 9, err), SL_OK);
    assert_true(o.receive_rate == 20.0);
    lt_opts_fini(&o);
    const char *rr_elsewhere[] = {"send", "-d", "1", "--receive-rate", "20"};
    assert_int_equal(parse(&o, rr_elsewhere, 5, err), SL_EINVAL);
    assert_non_null(strstr(err, "noisy"));
    lt_opts_fini(&o);
    const char *raw[] = {"raw-action", "ListQueues", "{}", "-n", "5", "--target", "127.0.0.1:7"};
    assert_int_equal(parse(&o, raw, 7, err), SL_OK);
    assert_string_equal(o.raw_action, "ListQueues");
    assert_int_equal(o.port, 7);
    assert_string_equal(o.authority, "127.0.0.1:7");
    lt_opts_fini(&o);
    const char *batch[] = {"send", "-n", "5", "--batch", "3"};
    assert_int_equal(parse(&o, batch, 5, err), SL_EINVAL);
    lt_opts_fini(&o);
}

static void bodies_carry_size_and_timestamp(void **state)
{
    struct sl_buf b;
    sl_buf_init(&b);
    lt_body_send(&b, "http://127.0.0.1:9324/default/q", 100, 1, 1234567);
    json_t *j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    const char *body = json_string_value(json_object_get(j, "MessageBody"));
    assert_int_equal(strlen(body), 100);
    assert_int_equal(lt_body_timestamp(body, strlen(body)), 1234567);
    json_decref(j);
    sl_buf_reset(&b);
    lt_body_send(&b, "u", 64, 10, 99);
    j = json_loadb(b.p, b.n, 0, NULL);
    assert_non_null(j);
    json_t *entries = json_object_get(j, "Entries");
    assert_int_equal(json_array_size(entries), 10);
    assert_string_equal(json_string_value(json_object_get(json_array_get(entries, 9), "Id")), "m9");
    json_decref(j);
    assert_int_equal(lt_body_timestamp("hello", 5), 0);
    sl_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(json_record_shape),
        cmocka_unit_test(noisy_merges_quiet_tenants),
        cmocka_unit_test(noisy_only_splits_tenants),
        cmocka_unit_test(noisy_only_records),
        cmocka_unit_test(arrivals_option),
        cmocka_unit_test(error_codes),
        cmocka_unit_test(command_line_refusals),
        cmocka_unit_test(bodies_carry_size_and_timestamp),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
