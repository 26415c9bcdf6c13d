/*
 * test_metrics.c -- the request counters of gw_metrics.c and their
 * rendering, checked line by line by a strict Prometheus text-format
 * (0.0.4) checker written here from the format's description: metric and
 * label name syntax, label value escapes, # HELP / # TYPE before a
 * family's samples, each family in one contiguous block, numeric values,
 * histograms' le labels, cumulative buckets and +Inf == _count. The
 * checker itself is tested on bad inputs, so that it can fail.
 *
 * The engine-backed test opens a real partitions engine in a temp dir
 * (no queues) so that the partition and tenant gauges render too.
 */
#define _XOPEN_SOURCE 700 /* nftw */
#include <ftw.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cfg.h"
#include "gw_act.h"
#include "part.h"
#include "pol.h"

/* ---- a strict exposition checker ------------------------------------------- */

#define MAX_FAMILIES 128

struct family {
    char name[128];
    char type[16];
    bool help, closed;
};

struct checker {
    struct family fam[MAX_FAMILIES];
    size_t n;
    struct family *current; /* the family whose samples come now */
    char why[256];
    /* histogram consistency: the last bucket value of the current series */
    double last_bucket;
    char last_series[512];
};

static bool reject(struct checker *c, const char *why, const char *line)
{
    snprintf(c->why, sizeof(c->why), "%s: %s", why, line);
    return false;
}

static bool metric_name_char(char ch, bool first)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_' || ch == ':' ||
           (!first && ch >= '0' && ch <= '9');
}

static bool label_name_char(char ch, bool first)
{
    return ch != ':' && metric_name_char(ch, first);
}

/* Reads a metric name at *p into out; false when there is none. */
static bool read_name(const char **p, char *out, size_t cap, bool label)
{
    size_t n = 0;
    while ((label ? label_name_char(**p, n == 0) : metric_name_char(**p, n == 0)) && n + 1 < cap) {
        out[n++] = *(*p)++;
    }
    out[n] = '\0';
    return n > 0;
}

static struct family *find_family(struct checker *c, const char *name)
{
    for (size_t i = 0; i < c->n; i++) {
        if (strcmp(c->fam[i].name, name) == 0) {
            return &c->fam[i];
        }
    }
    return NULL;
}

static bool valid_value(const char *s)
{
    if (strcmp(s, "+Inf") == 0 || strcmp(s, "-Inf") == 0 || strcmp(s, "NaN") == 0) {
        return true;
    }
    char *end = NULL;
    strtod(s, &end);
    return *s != '\0' && end != s && *end == '\0' && strchr(s, ' ') == NULL;
}

static bool check_comment(struct checker *c, const char *line)
{
    const char *p = line + 2;
    bool help = strncmp(line, "# HELP ", 7) == 0, type = strncmp(line, "# TYPE ", 7) == 0;
    if (!help && !type) {
        return true; /* a plain comment */
    }
    p = line + 7;
    char name[128];
    if (!read_name(&p, name, sizeof(name), false) || *p != ' ') {
        return reject(c, "bad name in comment", line);
    }
    p++;
    struct family *f = find_family(c, name);
    if (f == NULL) {
        if (c->n == MAX_FAMILIES) {
            return reject(c, "too many families", line);
        }
        f = &c->fam[c->n++];
        snprintf(f->name, sizeof(f->name), "%s", name);
    } else if (f->closed || f != c->current) {
        return reject(c, "family reopened", line);
    }
    if (c->current != NULL && c->current != f) {
        c->current->closed = true;
    }
    c->current = f;
    if (help) {
        if (f->help) {
            return reject(c, "second HELP", line);
        }
        f->help = true;
        return true;
    }
    if (f->type[0] != '\0') {
        return reject(c, "second TYPE", line);
    }
    static const char *types[] = {"counter", "gauge", "histogram", "summary", "untyped"};
    for (size_t i = 0; i < SL_ARRAY_LEN(types); i++) {
        if (strcmp(p, types[i]) == 0) {
            snprintf(f->type, sizeof(f->type), "%s", p);
            return true;
        }
    }
    return reject(c, "unknown type", line);
}

/* The family a sample name belongs to: itself, or a histogram's base. */
static struct family *family_of(struct checker *c, const char *name, const char **suffix)
{
    *suffix = "";
    struct family *f = find_family(c, name);
    if (f != NULL) {
        return f;
    }
    static const char *sfx[] = {"_bucket", "_sum", "_count"};
    for (size_t i = 0; i < SL_ARRAY_LEN(sfx); i++) {
        size_t n = strlen(name), k = strlen(sfx[i]);
        if (n > k && strcmp(name + n - k, sfx[i]) == 0) {
            char base[128];
            snprintf(base, sizeof(base), "%.*s", (int)(n - k), name);
            f = find_family(c, base);
            if (f != NULL && strcmp(f->type, "histogram") == 0) {
                *suffix = sfx[i];
                return f;
            }
        }
    }
    return NULL;
}

static bool check_sample(struct checker *c, const char *line)
{
    const char *p = line;
    char name[128];
    if (!read_name(&p, name, sizeof(name), false)) {
        return reject(c, "bad metric name", line);
    }
    const char *suffix;
    struct family *f = family_of(c, name, &suffix);
    if (f == NULL || f->type[0] == '\0' || !f->help) {
        return reject(c, "sample before its HELP and TYPE", line);
    }
    if (f != c->current) {
        return reject(c, "sample outside its family's block", line);
    }
    if (strcmp(f->type, "histogram") == 0 && suffix[0] == '\0') {
        return reject(c, "histogram sample without a suffix", line);
    }
    char series[512]; /* the family and every label but le */
    char le[64] = "";
    snprintf(series, sizeof(series), "%s:", f->name);
    if (*p == '{') {
        p++;
        while (*p != '}') {
            char lname[128];
            if (!read_name(&p, lname, sizeof(lname), true) || p[0] != '=' || p[1] != '"') {
                return reject(c, "bad label", line);
            }
            p += 2;
            char value[256];
            size_t n = 0;
            while (*p != '"') {
                if (*p == '\0' || *p == '\n') {
                    return reject(c, "unterminated label value", line);
                }
                if (*p == '\\') {
                    p++;
                    if (*p != '\\' && *p != '"' && *p != 'n') {
                        return reject(c, "bad escape", line);
                    }
                }
                if (n + 1 < sizeof(value)) {
                    value[n++] = *p;
                }
                p++;
            }
            value[n] = '\0';
            p++;
            if (strcmp(lname, "le") == 0) {
                snprintf(le, sizeof(le), "%s", value);
            } else {
                size_t at = strlen(series);
                snprintf(series + at, sizeof(series) - at, "%s=%s;", lname, value);
            }
            if (*p == ',') {
                p++;
            } else if (*p != '}') {
                return reject(c, "bad label separator", line);
            }
        }
        p++;
    }
    if (*p != ' ') {
        return reject(c, "no space before the value", line);
    }
    p++;
    if (!valid_value(p)) {
        return reject(c, "bad value", line);
    }
    double v = strcmp(p, "+Inf") == 0 ? INFINITY : strtod(p, NULL);
    if (strcmp(suffix, "_bucket") == 0) {
        if (le[0] == '\0' || !valid_value(le)) {
            return reject(c, "bucket without a numeric le", line);
        }
        bool same = strcmp(series, c->last_series) == 0;
        if (same && v < c->last_bucket) {
            return reject(c, "buckets not cumulative", line);
        }
        snprintf(c->last_series, sizeof(c->last_series), "%s", series);
        c->last_bucket = v;
    } else if (strcmp(suffix, "_count") == 0) {
        if (strcmp(series, c->last_series) != 0 || v != c->last_bucket) {
            return reject(c, "_count differs from the +Inf bucket", line);
        }
    } else if (le[0] != '\0') {
        return reject(c, "le outside a bucket", line);
    }
    return true;
}

/* Checks a whole exposition; on failure c->why says which line and why. */
static bool check_exposition(struct checker *c, const char *text)
{
    memset(c, 0, sizeof(*c));
    const char *p = text;
    while (*p != '\0') {
        const char *end = strchr(p, '\n');
        if (end == NULL) {
            return reject(c, "last line without newline", p);
        }
        char line[1024];
        snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
        bool ok = line[0] == '#' ? check_comment(c, line) : check_sample(c, line);
        if (!ok) {
            return false;
        }
        p = end + 1;
    }
    return true;
}

static void assert_valid(const char *text)
{
    struct checker c;
    if (!check_exposition(&c, text)) {
        print_error("%s\n", c.why);
        fail_msg("exposition rejected");
    }
}

static char *render(struct gw_metrics *m, const struct gw_metrics_sources *src)
{
    struct sl_buf out;
    sl_buf_init(&out);
    gw_metrics_render(m, src, &out);
    sl_buf_append_byte(&out, '\0');
    return sl_buf_take(&out, NULL);
}

static bool has_line(const char *body, const char *line)
{
    size_t n = strlen(line);
    for (const char *p = body; (p = strstr(p, line)) != NULL; p++) {
        if ((p == body || p[-1] == '\n') && p[n] == '\n') {
            return true;
        }
    }
    return false;
}

/* ---- the checker can fail ------------------------------------------------------ */

static void test_checker_rejects(void **state)
{
    (void)state;
    static const char *bad[] = {
        "x_total 1\n",                                     /* no HELP/TYPE */
        "# HELP x h\n# TYPE x counter\nx 1",               /* no final newline */
        "# HELP x h\n# TYPE x counter\nx one\n",           /* value */
        "# HELP x h\n# TYPE x counter\nx{1a=\"v\"} 1\n",   /* label name */
        "# HELP x h\n# TYPE x counter\nx{a=\"v\\t\"} 1\n", /* escape */
        "# HELP x h\n# TYPE x counter\nx{a=\"v} 1\n",      /* unterminated */
        "# HELP x h\n# TYPE x counter\n# HELP y h\n# TYPE y gauge\ny 1\nx 2\n", /* split family */
        ("# HELP x h\n# TYPE x histogram\nx_bucket{le=\"1\"} 2\nx_bucket{le=\"+Inf\"} 1\n"
         "x_sum 1\nx_count 1\n"), /* not cumulative */
        "# HELP x h\n# TYPE x histogram\nx_bucket{le=\"+Inf\"} 2\nx_sum 1\nx_count 3\n",
        "# HELP 1x h\n# TYPE 1x counter\n",
        "# HELP x h\n# TYPE x countr\n",
    };
    for (size_t i = 0; i < SL_ARRAY_LEN(bad); i++) {
        struct checker c;
        if (check_exposition(&c, bad[i])) {
            fail_msg("accepted bad input %zu", i);
        }
    }
    struct checker c;
    assert_true(check_exposition(&c, "# HELP x h\n# TYPE x counter\nx{a=\"q\\\"\\\\\\n\"} 1\n"));
}

/* ---- counters ------------------------------------------------------------------ */

static void test_label_escape(void **state)
{
    (void)state;
    struct sl_buf b;
    sl_buf_init(&b);
    gw_metrics_append_label_value(&b, "a\"b\\c\nd");
    sl_buf_append_byte(&b, '\0');
    assert_string_equal(b.p, "a\\\"b\\\\c\\nd");
    sl_buf_free(&b);
}

static void test_empty_renders(void **state)
{
    (void)state;
    struct gw_metrics *m = gw_metrics_new();
    struct gw_metrics_sources src = {0};
    char *text = render(m, &src);
    assert_valid(text);
    assert_true(has_line(text, "# TYPE sluice_requests_total counter"));
    assert_true(has_line(text, "# TYPE sluice_request_duration_seconds histogram"));
    free(text);
    gw_metrics_free(m);
}

static void test_requests_counted(void **state)
{
    (void)state;
    struct gw_metrics *m = gw_metrics_new();
    for (int i = 0; i < 3; i++) {
        gw_metrics_count_request(m, "acme", GW_SQS_ACT_SEND_MESSAGE, GW_SQS_OK, 2000000); /* 2 ms */
    }
    gw_metrics_count_request(m, "acme", GW_SQS_ACT_SEND_MESSAGE, GW_SQS_E_REQUEST_THROTTLED, 0);
    gw_metrics_count_request(m, "acme", GW_SQS_ACT_RECEIVE_MESSAGE, GW_SQS_E_OVER_LIMIT, 0);
    gw_metrics_count_request(m, NULL, GW_SQS_ACT__COUNT, GW_SQS_E_MISSING_AUTHENTICATION_TOKEN, 0);
    gw_metrics_count_request(m, "we\"ird\\", GW_SQS_ACT_LIST_QUEUES, GW_SQS_OK, 30000000000ull);
    gw_metrics_count_spill(m, "acme", 7);
    gw_metrics_observe_first_receive_age(m, "acme", 1500);
    gw_metrics_observe_receive_latency(m, "acme", 25000000);

    char *text = render(m, &(struct gw_metrics_sources){0});
    assert_valid(text);
    assert_true(has_line(
        text, "sluice_requests_total{tenant=\"acme\",action=\"SendMessage\",outcome=\"ok\"} 3"));
    assert_true(has_line(text, "sluice_requests_total{tenant=\"acme\",action=\"SendMessage\","
                               "outcome=\"RequestThrottled\"} 1"));
    assert_true(has_line(text, "sluice_requests_total{tenant=\"-\",action=\"(unknown)\","
                               "outcome=\"MissingAuthenticationToken\"} 1"));
    assert_true(has_line(text, "sluice_requests_total{tenant=\"we\\\"ird\\\\\","
                               "action=\"ListQueues\",outcome=\"ok\"} 1"));
    assert_true(has_line(text, "sluice_throttled_requests_total{tenant=\"acme\"} 2"));
    assert_true(has_line(text, "sluice_spilled_messages_total{tenant=\"acme\"} 7"));
    /* 2 ms falls in le=0.0025, not in le=0.001; the throttled send (0 s)
     * in both. */
    assert_true(has_line(
        text, "sluice_request_duration_seconds_bucket{action=\"SendMessage\",le=\"0.001\"} 1"));
    assert_true(has_line(
        text, "sluice_request_duration_seconds_bucket{action=\"SendMessage\",le=\"0.0025\"} 4"));
    assert_true(has_line(text, "sluice_request_duration_seconds_count{action=\"SendMessage\"} 4"));
    assert_true(
        has_line(text, "sluice_request_duration_seconds_sum{action=\"SendMessage\"} 0.006"));
    /* 30 s is above the largest bound: only +Inf holds it */
    assert_true(has_line(
        text, "sluice_request_duration_seconds_bucket{action=\"ListQueues\",le=\"20\"} 0"));
    assert_true(has_line(
        text, "sluice_request_duration_seconds_bucket{action=\"ListQueues\",le=\"+Inf\"} 1"));
    assert_true(has_line(text, "sluice_first_receive_age_seconds_count{tenant=\"acme\"} 1"));
    assert_true(
        has_line(text, "sluice_first_receive_age_seconds_bucket{tenant=\"acme\",le=\"1\"} 0"));
    assert_true(
        has_line(text, "sluice_first_receive_age_seconds_bucket{tenant=\"acme\",le=\"5\"} 1"));
    assert_true(has_line(text, "sluice_receive_latency_seconds_count{tenant=\"acme\"} 1"));
    free(text);
    gw_metrics_free(m);
}

static void test_many_tenants(void **state)
{
    (void)state;
    struct gw_metrics *m = gw_metrics_new();
    char name[32];
    for (int round = 0; round < 2; round++) {
        for (int i = 0; i < 500; i++) { /* grows the table several times */
            snprintf(name, sizeof(name), "t%03d", i);
            gw_metrics_count_request(m, name, GW_SQS_ACT_DELETE_MESSAGE, GW_SQS_OK, 0);
        }
    }
    char *text = render(m, &(struct gw_metrics_sources){0});
    assert_valid(text);
    for (int i = 0; i < 500; i++) {
        char line[128];
        snprintf(
            line, sizeof(line),
            "sluice_requests_total{tenant=\"t%03d\",action=\"DeleteMessage\",outcome=\"ok\"} 2", i);
        assert_true(has_line(text, line));
    }
    /* sorted by tenant */
    assert_true(strstr(text, "tenant=\"t000\"") < strstr(text, "tenant=\"t499\""));
    free(text);
    gw_metrics_free(m);
}

#define THREAD_COUNTS 20000

struct counting_thread {
    struct gw_metrics *m;
    int id;
};

static void *count_many(void *arg)
{
    struct counting_thread *t = arg;
    char own[16];
    snprintf(own, sizeof(own), "own%d", t->id);
    for (int i = 0; i < THREAD_COUNTS; i++) {
        gw_metrics_count_request(t->m, "shared", GW_SQS_ACT_SEND_MESSAGE, GW_SQS_OK, 1000);
        gw_metrics_count_spill(t->m, own, 1);
    }
    return NULL;
}

static void test_threads_count_exactly(void **state)
{
    (void)state;
    struct gw_metrics *m = gw_metrics_new();
    pthread_t th[4];
    struct counting_thread args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (struct counting_thread){m, i};
        assert_int_equal(pthread_create(&th[i], NULL, count_many, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
    }
    char *text = render(m, &(struct gw_metrics_sources){0});
    assert_true(has_line(
        text, "sluice_requests_total{tenant=\"shared\",action=\"SendMessage\",outcome=\"ok\"} "
              "80000"));
    assert_true(has_line(text, "sluice_spilled_messages_total{tenant=\"own3\"} 20000"));
    free(text);
    gw_metrics_free(m);
}

/* ---- with the engine, the limiter and a snapshot ------------------------------------ */

static int remove_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb;
    (void)flag;
    (void)ftw;
    return remove(path);
}

static void test_gauges_render(void **state)
{
    (void)state;
    static const char yaml[] = "listen: 127.0.0.1:9324\n"
                               "data_dir: ./unused\n"
                               "partitions: 3\n"
                               "shard_size: 1\n"
                               "tenants:\n"
                               "  acme:\n"
                               "    access_key_id: AKIDACME\n"
                               "    secret_access_key: s\n"
                               "    limits:\n"
                               "      requests_per_second: 10\n"
                               "      burst: 5\n";
    struct cfg_snapshot *snap = NULL;
    struct cfg_diags diags = {0};
    assert_int_equal(cfg_load_string("t.yaml", yaml, sizeof(yaml) - 1, &snap, &diags), 0);
    cfg_diags_free(&diags);

    char dir[] = "/tmp/sluice-metrics-XXXXXX";
    assert_non_null(mkdtemp(dir));
    struct part_options opt = {.data_dir = dir, .partitions = 3, .durability = PART_DURABILITY_OS};
    struct part_engine *engine = NULL;
    char err[256];
    assert_int_equal(part_engine_open(&opt, &engine, err, sizeof(err)), SL_OK);
    struct pol_limiter *limiter = pol_limiter_new(snap, 1000);
    struct pol_tenant_state *acme = pol_limiter_find(limiter, "acme", 4);
    assert_non_null(acme);
    assert_true(pol_gcra_take(&acme->rate, 2, 1000000, 1000, NULL));

    struct gw_metrics *m = gw_metrics_new();
    struct gw_metrics_sources src = {
        .snap = snap, .engine = engine, .limiter = limiter, .now_ns = 1000};
    char *text = render(m, &src);
    assert_valid(text);
    assert_true(has_line(text, "sluice_tenant_rate_tokens_available{tenant=\"acme\"} 3"));
    assert_true(has_line(text, "sluice_tenant_backlog_messages{tenant=\"acme\"} 0"));
    assert_true(has_line(text, "sluice_tenant_long_polls{tenant=\"acme\"} 0"));
    assert_true(has_line(text, "sluice_tenant_requests_in_progress{tenant=\"acme\"} 0"));
    assert_true(has_line(text, "sluice_partition_writer_queue_depth{partition=\"2\"} 0"));
    assert_true(has_line(text, "sluice_partition_load_messages{partition=\"1\"} 0"));
    assert_true(has_line(text, "sluice_partition_backlog_messages{partition=\"0\"} 0"));
    assert_non_null(strstr(text, "# TYPE sluice_writer_queue_wait_seconds histogram\n"));
    assert_true(has_line(text, "sluice_partition_failed{partition=\"0\"} 0"));
    assert_true(has_line(text, "sluice_partition_timers{partition=\"1\"} 0"));
    assert_true(has_line(text, "sluice_partition_fifo_dedup_ids{partition=\"2\"} 0"));
    assert_non_null(strstr(text, "# TYPE sluice_partition_fifo_select_steps_total counter\n"));
    assert_non_null(strstr(text, "# TYPE sluice_partition_commits_total counter\n"));
    assert_non_null(strstr(text, "# TYPE sluice_queue_ready_messages gauge\n"));
    free(text);

    struct part_partition_stats st;
    assert_int_equal(part_engine_stats(engine, 3, &st), SL_EINVAL);
    assert_int_equal(part_engine_stats(engine, 0, &st), SL_OK);
    assert_false(st.failed);

    gw_metrics_free(m);
    pol_limiter_free(limiter);
    part_engine_close(engine);
    cfg_snapshot_unref(snap);
    nftw(dir, remove_entry, 8, FTW_DEPTH | FTW_PHYS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checker_rejects), cmocka_unit_test(test_label_escape),
        cmocka_unit_test(test_empty_renders),   cmocka_unit_test(test_requests_counted),
        cmocka_unit_test(test_many_tenants),    cmocka_unit_test(test_threads_count_exactly),
        cmocka_unit_test(test_gauges_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
