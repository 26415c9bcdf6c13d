/*
 * lt_report.c -- what a run produced: per-group statistics, the human
 * table, the JSON record (jansson) and the gnuplot picture; also the
 * gateway's CPU time from /proc.
 *
 * JSON record (version 1):
 *   { "tool": "sluice-load", "version": 1, "scenario", "target", "tls",
 *     "config": { connections, streams, duration_s, count, rate, mode,
 *                 batch, message_size, queues, tenants[], wait_s,
 *                 http_version ("2" | "1.1"), protocol ("json" | "query"), ... },
 *     "setup_error": null | "why",
 *     "elapsed_s", "server_cpu": null | { pid, cpu_s, us_per_request,
 *                                          us_per_message },
 *     "totals": { requests, errors, messages, requests_per_s, messages_per_s },
 *     "groups": [ { name, tenant, role, mode, target_rate, elapsed_s, requests,
 *                   errors, messages, requests_per_s, messages_per_s,
 *                   empty_receives, late_max, unstarted,
 *                   --fifo-groups consumers: fifo_checked, fifo_order_violations,
 *                   errors_by_code: { CODE: n },
 *                   latency_us: { METRIC: { count, min, mean, p50, p90, p99,
 *                                           p99_9, max } },
 *                   timeline: { METRIC: [ [t_s, n, p50, p99, max], ... ] } } ],
 *     noisy only (not with --only flood): "quiet": { ROLE: { groups, requests,
 *                  errors, errors_by_code, latency_us: { METRIC: {...} } } } }
 *
 * A group's rates are over its elapsed_s, from its start to its last reply
 * that moved a message (lt_group_elapsed_s). Totals count each message once: a round trip counts
 * what the consumers took, noisy what the tenants sent (its receivers take the same messages).
 *
 * Threading: none.
 */
#include "lt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const metric_names[LT_M_COUNT] = {
    [LT_M_OP] = "op",         [LT_M_SEND] = "send", [LT_M_RECEIVE] = "receive",
    [LT_M_DELETE] = "delete", [LT_M_E2E] = "e2e",   [LT_M_WAKE] = "wake",
};

const char *lt_metric_name(enum lt_metric m)
{
    return metric_names[m];
}

/* ===== group statistics ================================================= */

void lt_group_stats_init(struct lt_group_stats *g, const char *name, const char *tenant)
{
    memset(g, 0, sizeof(*g));
    snprintf(g->name, sizeof(g->name), "%s", name);
    snprintf(g->tenant, sizeof(g->tenant), "%s", tenant);
    for (int i = 0; i < LT_M_COUNT; i++) {
        lt_hist_init(&g->m[i].all);
        lt_hist_init(&g->m[i].interval);
    }
}

void lt_group_stats_fini(struct lt_group_stats *g)
{
    for (int i = 0; i < LT_M_COUNT; i++) {
        lt_hist_fini(&g->m[i].all);
        lt_hist_fini(&g->m[i].interval);
        free(g->m[i].timeline);
    }
}

void lt_group_stats_record(struct lt_group_stats *g, enum lt_metric m, uint64_t us)
{
    g->m[m].used = true;
    lt_hist_record(&g->m[m].all, us);
    lt_hist_record(&g->m[m].interval, us);
}

void lt_group_stats_tick(struct lt_group_stats *g, double t_s)
{
    for (int i = 0; i < LT_M_COUNT; i++) {
        struct lt_metric_stats *m = &g->m[i];
        if (!m->used) {
            continue;
        }
        if (m->timeline_n == m->timeline_cap) {
            m->timeline_cap = m->timeline_cap ? 2 * m->timeline_cap : 64;
            m->timeline = sl_xrealloc(m->timeline, m->timeline_cap * sizeof(*m->timeline));
        }
        m->timeline[m->timeline_n++] = (struct lt_timeline_point){
            .t_s = t_s,
            .n = m->interval.total,
            .p50_us = lt_hist_percentile(&m->interval, 50),
            .p99_us = lt_hist_percentile(&m->interval, 99),
            .max_us = m->interval.max,
        };
        lt_hist_reset(&m->interval);
    }
}

/* ===== JSON ============================================================= */

static double per_s(uint64_t n, double s)
{
    return s > 0 ? (double)n / s : 0.0;
}

static json_t *latency_json(const struct lt_hist *h)
{
    return json_pack("{s:I,s:I,s:f,s:I,s:I,s:I,s:I,s:I}", "count", (json_int_t)h->total, "min",
                     (json_int_t)(h->total ? h->min : 0), "mean", lt_hist_mean(h), "p50",
                     (json_int_t)lt_hist_percentile(h, 50), "p90",
                     (json_int_t)lt_hist_percentile(h, 90), "p99",
                     (json_int_t)lt_hist_percentile(h, 99), "p99_9",
                     (json_int_t)lt_hist_percentile(h, 99.9), "max", (json_int_t)h->max);
}

static json_t *group_json(const struct lt_group_stats *g)
{
    json_t *codes = json_object();
    for (size_t i = 0; i < g->error_codes.n; i++) {
        json_object_set_new(codes, g->error_codes.e[i].code,
                            json_integer((json_int_t)g->error_codes.e[i].n));
    }
    if (g->error_codes.other) {
        json_object_set_new(codes, "(other)", json_integer((json_int_t)g->error_codes.other));
    }
    json_t *lat = json_object();
    json_t *tl = json_object();
    for (int i = 0; i < LT_M_COUNT; i++) {
        const struct lt_metric_stats *m = &g->m[i];
        if (!m->used) {
            continue;
        }
        json_object_set_new(lat, metric_names[i], latency_json(&m->all));
        json_t *pts = json_array();
        for (size_t k = 0; k < m->timeline_n; k++) {
            const struct lt_timeline_point *p = &m->timeline[k];
            json_array_append_new(pts, json_pack("[f,I,I,I,I]", p->t_s, (json_int_t)p->n,
                                                 (json_int_t)p->p50_us, (json_int_t)p->p99_us,
                                                 (json_int_t)p->max_us));
        }
        json_object_set_new(tl, metric_names[i], pts);
    }
    json_t *rec = json_pack(
        "{s:s,s:s,s:s,s:s,s:f,s:f,s:I,s:I,s:I,s:f,s:f,s:I,s:I,s:I,s:o,s:o,s:o}", "name", g->name,
        "tenant", g->tenant, "role", g->role, "mode", g->target_rate > 0 ? "open" : "closed",
        "target_rate", g->target_rate, "elapsed_s", g->elapsed_s, "requests",
        (json_int_t)g->requests, "errors", (json_int_t)g->errors, "messages",
        (json_int_t)g->messages, "requests_per_s", per_s(g->requests, g->elapsed_s),
        "messages_per_s", per_s(g->messages, g->elapsed_s), "empty_receives",
        (json_int_t)g->empty_receives, "late_max", (json_int_t)g->late_max, "unstarted",
        (json_int_t)g->unstarted, "errors_by_code", codes, "latency_us", lat, "timeline", tl);
    if (g->fifo_checked > 0) {
        json_object_set_new(rec, "fifo_checked", json_integer((json_int_t)g->fifo_checked));
        json_object_set_new(rec, "fifo_order_violations",
                            json_integer((json_int_t)g->fifo_violations));
    }
    return rec;
}

static bool is_quiet(const struct lt_group_stats *g, const char *role)
{
    return strncmp(g->name, "quiet:", 6) == 0 && strcmp(g->role, role) == 0;
}

/* noisy: the quiet tenants' groups of one role as one population: their
 * histograms merged (a percentile of the union, not an average of
 * percentiles), their requests and errors summed. NULL when none. */
static json_t *quiet_role_json(const struct lt_result *r, const char *role)
{
    size_t groups = 0;
    uint64_t requests = 0;
    uint64_t errors = 0;
    json_t *codes = json_object();
    for (size_t i = 0; i < r->group_count; i++) {
        const struct lt_group_stats *g = &r->groups[i];
        if (!is_quiet(g, role)) {
            continue;
        }
        groups++;
        requests += g->requests;
        errors += g->errors;
        for (size_t e = 0; e < g->error_codes.n; e++) {
            const char *code = g->error_codes.e[e].code;
            json_int_t n = json_integer_value(json_object_get(codes, code));
            json_object_set_new(codes, code, json_integer(n + (json_int_t)g->error_codes.e[e].n));
        }
    }
    if (groups == 0) {
        json_decref(codes);
        return NULL;
    }
    json_t *lat = json_object();
    for (int m = 0; m < LT_M_COUNT; m++) {
        struct lt_hist merged;
        lt_hist_init(&merged);
        bool used = false;
        for (size_t i = 0; i < r->group_count; i++) {
            const struct lt_group_stats *g = &r->groups[i];
            if (is_quiet(g, role) && g->m[m].used) {
                lt_hist_merge(&merged, &g->m[m].all);
                used = true;
            }
        }
        if (used) {
            json_object_set_new(lat, metric_names[m], latency_json(&merged));
        }
        lt_hist_fini(&merged);
    }
    return json_pack("{s:I,s:I,s:I,s:o,s:o}", "groups", (json_int_t)groups, "requests",
                     (json_int_t)requests, "errors", (json_int_t)errors, "errors_by_code", codes,
                     "latency_us", lat);
}

static json_t *quiet_json(const struct lt_result *r)
{
    json_t *q = json_object();
    static const char *const roles[] = {"send", "receive-delete"};
    for (size_t i = 0; i < SL_ARRAY_LEN(roles); i++) {
        json_t *one = quiet_role_json(r, roles[i]);
        if (one != NULL) {
            json_object_set_new(q, roles[i], one);
        }
    }
    return q;
}

static json_t *config_json(const struct lt_opts *o)
{
    json_t *tenants = json_array();
    for (size_t i = 0; i < o->tenant_count; i++) {
        json_array_append_new(tenants, json_string(o->tenants[i].access_key_id));
    }
    json_t *c = json_pack(
        "{s:I,s:I,s:I,s:f,s:I,s:f,s:s,s:I,s:I,s:I,s:o,s:I,s:I}", "connections",
        (json_int_t)o->connections, "streams", (json_int_t)o->streams, "consumer_streams",
        (json_int_t)o->consumer_streams, "duration_s", o->duration_s, "count", (json_int_t)o->count,
        "rate", o->rate, "mode", o->rate > 0 ? "open" : "closed", "batch", (json_int_t)o->batch,
        "message_size", (json_int_t)o->message_size, "queues", (json_int_t)o->queues, "tenants",
        tenants, "wait_s", (json_int_t)o->wait_s, "prefill", (json_int_t)o->prefill);
    json_object_set_new(c, "http_version", json_string(o->http1 ? "1.1" : "2"));
    json_object_set_new(c, "arrivals", json_string(o->lockstep ? "lockstep" : "staggered"));
    json_object_set_new(c, "protocol",
                        json_string(o->protocol == LT_PROTO_QUERY ? "query" : "json"));
    if (o->scenario == LT_SC_NOISY) {
        json_object_set_new(c, "flood_rate", json_real(o->flood_rate));
        json_object_set_new(c, "receive_rate", json_real(o->receive_rate));
        json_object_set_new(c, "flood_receive_rate", json_real(o->flood_receive_rate));
        json_object_set_new(c, "only", json_string(lt_noisy_part_name(o->only)));
    }
    if (o->scenario == LT_SC_LONGPOLL) {
        json_object_set_new(c, "gap_ms", json_integer(o->gap_ms));
    }
    if (o->scenario == LT_SC_RAW) {
        json_object_set_new(c, "action", json_string(o->raw_action));
        json_object_set_new(c, "body", json_string(o->raw_json));
    }
    return c;
}

json_t *lt_result_json(const struct lt_result *r)
{
    const struct lt_opts *o = r->opts;
    uint64_t req = 0;
    uint64_t err = 0;
    uint64_t msg = 0;
    double longest = 0;
    json_t *groups = json_array();
    for (size_t i = 0; i < r->group_count; i++) {
        const struct lt_group_stats *g = &r->groups[i];
        json_array_append_new(groups, group_json(g));
        if (strcmp(g->name, "prefill") == 0) {
            continue; /* set-up traffic, not the measurement */
        }
        req += g->requests;
        err += g->errors;
        /* Each message once: consumed in a round trip, sent when noisy. */
        if ((o->scenario != LT_SC_ROUNDTRIP || strcmp(g->name, "consumers") == 0) &&
            (o->scenario != LT_SC_NOISY || strcmp(g->role, "send") == 0)) {
            msg += g->messages;
        }
        longest = SL_MAX(longest, g->elapsed_s);
    }
    json_t *cpu = json_null();
    if (r->have_cpu) {
        cpu = json_pack("{s:i,s:f,s:f,s:f}", "pid", r->server_pid, "cpu_s", r->server_cpu_s,
                        "us_per_request", req ? r->server_cpu_s * 1e6 / (double)req : 0.0,
                        "us_per_message", msg ? r->server_cpu_s * 1e6 / (double)msg : 0.0);
    }
    json_t *totals = json_pack("{s:I,s:I,s:I,s:f,s:f}", "requests", (json_int_t)req, "errors",
                               (json_int_t)err, "messages", (json_int_t)msg, "requests_per_s",
                               per_s(req, longest), "messages_per_s", per_s(msg, longest));
    json_t *j =
        json_pack("{s:s,s:i,s:s,s:s,s:b,s:o,s:o,s:f,s:o,s:o,s:o}", "tool", "sluice-load", "version",
                  1, "scenario", o->scenario_name, "target", o->authority, "tls", o->tls, "config",
                  config_json(o), "setup_error",
                  r->setup_error[0] ? json_string(r->setup_error) : json_null(), "elapsed_s",
                  r->elapsed_s, "server_cpu", cpu, "totals", totals, "groups", groups);
    if (o->scenario == LT_SC_NOISY && o->only != LT_NOISY_FLOOD) {
        json_object_set_new(j, "quiet", quiet_json(r));
    }
    return j;
}

int lt_result_write_json(const struct lt_result *r, const char *path)
{
    json_t *j = lt_result_json(r);
    int rc = json_dump_file(j, path, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    json_decref(j);
    return rc == 0 ? SL_OK : SL_EIO;
}

/* ===== table ============================================================ */

static void print_ms(FILE *out, uint64_t us)
{
    fprintf(out, " %9.3f", (double)us / 1000.0);
}

/* noisy: one row per role and metric of the quiet tenants merged. */
static void print_quiet(const json_t *quiet, FILE *out)
{
    const char *role;
    const json_t *q;
    json_object_foreach((json_t *)quiet, role, q)
    {
        char name[64];
        snprintf(name, sizeof(name), "quiet x%d/%s",
                 (int)json_integer_value(json_object_get(q, "groups")),
                 strcmp(role, "send") == 0 ? "send" : "recv");
        bool first = true;
        const char *metric;
        const json_t *h;
        json_object_foreach(json_object_get(q, "latency_us"), metric, h)
        {
            if (first) {
                fprintf(out, "%-22s %10s %10s %8" JSON_INTEGER_FORMAT " ", name, "", "",
                        json_integer_value(json_object_get(q, "errors")));
            } else {
                fprintf(out, "%-22s %10s %10s %8s ", "", "", "", "");
            }
            first = false;
            fprintf(out, "%-8s", metric);
            static const char *const cols[] = {"p50", "p90", "p99", "p99_9", "max"};
            for (size_t c = 0; c < SL_ARRAY_LEN(cols); c++) {
                print_ms(out, (uint64_t)json_integer_value(json_object_get(h, cols[c])));
            }
            fprintf(out, " %9" JSON_INTEGER_FORMAT "\n",
                    json_integer_value(json_object_get(h, "count")));
        }
    }
}

void lt_result_print(const struct lt_result *r, FILE *out)
{
    json_t *j = lt_result_json(r);
    json_t *totals = json_object_get(j, "totals");
    static const char *const transports[2][2] = {{"h2c", "h2/TLS"}, {"HTTP/1.1", "HTTP/1.1/TLS"}};
    fprintf(out, "sluice-load %s against %s (%s, %s), %.1f s\n", r->opts->scenario_name,
            r->opts->authority, transports[r->opts->http1][r->opts->tls],
            r->opts->protocol == LT_PROTO_QUERY ? "query" : "JSON 1.0", r->elapsed_s);
    if (r->setup_error[0]) {
        fprintf(out, "not run: %s\n", r->setup_error);
    }
    fprintf(out, "%-22s %10s %10s %8s %-8s %9s %9s %9s %9s %9s %9s\n", "group", "req/s", "msg/s",
            "errors", "latency", "p50 ms", "p90 ms", "p99 ms", "p99.9 ms", "max ms", "count");
    for (size_t i = 0; i < r->group_count; i++) {
        const struct lt_group_stats *g = &r->groups[i];
        bool first = true;
        for (int k = 0; k < LT_M_COUNT; k++) {
            const struct lt_hist *h = &g->m[k].all;
            if (!g->m[k].used) {
                continue;
            }
            if (first) {
                fprintf(out, "%-22s %10.0f %10.0f %8" PRIu64 " ", g->name,
                        per_s(g->requests, g->elapsed_s), per_s(g->messages, g->elapsed_s),
                        g->errors);
            } else {
                fprintf(out, "%-22s %10s %10s %8s ", "", "", "", "");
            }
            first = false;
            fprintf(out, "%-8s", metric_names[k]);
            print_ms(out, lt_hist_percentile(h, 50));
            print_ms(out, lt_hist_percentile(h, 90));
            print_ms(out, lt_hist_percentile(h, 99));
            print_ms(out, lt_hist_percentile(h, 99.9));
            print_ms(out, h->max);
            fprintf(out, " %9" PRIu64 "\n", h->total);
        }
        if (first) {
            fprintf(out, "%-22s %10.0f %10.0f %8" PRIu64 "\n", g->name,
                    per_s(g->requests, g->elapsed_s), per_s(g->messages, g->elapsed_s), g->errors);
        }
        for (size_t e = 0; e < g->error_codes.n; e++) {
            fprintf(out, "    error %-40s %" PRIu64 "\n", g->error_codes.e[e].code,
                    g->error_codes.e[e].n);
        }
        if (g->fifo_checked > 0) {
            fprintf(out, "    FIFO order: %" PRIu64 " messages checked, %" PRIu64 " out of order\n",
                    g->fifo_checked, g->fifo_violations);
        }
        if (g->target_rate > 0 && (g->late_max > 1 || g->unstarted > 0)) {
            fprintf(out,
                    "    open loop at %.0f/s: up to %" PRIu64
                    " operations overdue at once, %" PRIu64 " never started\n",
                    g->target_rate, g->late_max, g->unstarted);
        }
    }
    print_quiet(json_object_get(j, "quiet"), out);
    fprintf(out, "total: %.0f req/s, %.0f msg/s, %" PRIu64 " errors\n",
            json_real_value(json_object_get(totals, "requests_per_s")),
            json_real_value(json_object_get(totals, "messages_per_s")),
            (uint64_t)json_integer_value(json_object_get(totals, "errors")));
    json_t *cpu = json_object_get(j, "server_cpu");
    if (json_is_object(cpu)) {
        fprintf(out, "gateway CPU: %.2f s, %.1f us/request, %.1f us/message\n",
                json_real_value(json_object_get(cpu, "cpu_s")),
                json_real_value(json_object_get(cpu, "us_per_request")),
                json_real_value(json_object_get(cpu, "us_per_message")));
    }
    json_decref(j);
}

/* ===== picture ========================================================== */

int lt_result_plot(const struct lt_result *r, const char *png_path)
{
    char dir[] = "/tmp/sluice-load-plot-XXXXXX";
    if (mkdtemp(dir) == NULL) {
        return SL_EIO;
    }
    struct sl_buf script;
    sl_buf_init(&script);
    sl_buf_printf(&script,
                  "set terminal pngcairo size 1200,900 noenhanced\n"
                  "set output '%s'\nset multiplot layout 2,1 title 'sluice-load %s'\n"
                  "set xlabel 'seconds'\nset ylabel 'latency ms'\nset logscale y\n"
                  "set key outside right\nplot ",
                  png_path, r->opts->scenario_name);
    struct sl_buf hist_plot;
    sl_buf_init(&hist_plot);
    sl_buf_append_cstr(&hist_plot,
                       "set xlabel 'percentile'\nset ylabel 'latency ms'\nunset logscale\n"
                       "set logscale xy\nset xtics ('50' 2, '90' 10, '99' 100, '99.9' 1000, "
                       "'99.99' 10000)\nplot ");
    int series = 0;
    for (size_t i = 0; i < r->group_count; i++) {
        const struct lt_group_stats *g = &r->groups[i];
        for (int k = 0; k < LT_M_COUNT; k++) {
            const struct lt_metric_stats *m = &g->m[k];
            if (!m->used) {
                continue;
            }
            char tl_path[128];
            char pc_path[128];
            snprintf(tl_path, sizeof(tl_path), "%s/tl%zu_%d.dat", dir, i, k);
            snprintf(pc_path, sizeof(pc_path), "%s/pc%zu_%d.dat", dir, i, k);
            FILE *f = fopen(tl_path, "w");
            FILE *p = fopen(pc_path, "w");
            if (f == NULL || p == NULL) {
                if (f) {
                    fclose(f);
                }
                if (p) {
                    fclose(p);
                }
                continue;
            }
            for (size_t t = 0; t < m->timeline_n; t++) {
                fprintf(f, "%.2f %.3f %.3f\n", m->timeline[t].t_s,
                        (double)m->timeline[t].p50_us / 1000.0,
                        (double)m->timeline[t].p99_us / 1000.0);
            }
            /* x = 1 / (1 - q): 2 at the median, 100 at p99, 1000 at p99.9. */
            static const double qs[] = {0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 0.9995, 0.9999};
            for (size_t q = 0; q < SL_ARRAY_LEN(qs); q++) {
                fprintf(p, "%g %.3f\n", 1.0 / (1.0 - qs[q]),
                        (double)lt_hist_percentile(&m->all, qs[q] * 100) / 1000.0);
            }
            fclose(f);
            fclose(p);
            sl_buf_printf(&script,
                          "%s'%s' using 1:2 with lines title '%s %s p50', '%s' using 1:3 with "
                          "lines title '%s %s p99'",
                          series ? ", " : "", tl_path, g->name, metric_names[k], tl_path, g->name,
                          metric_names[k]);
            sl_buf_printf(&hist_plot, "%s'%s' using 1:2 with linespoints title '%s %s'",
                          series ? ", " : "", pc_path, g->name, metric_names[k]);
            series++;
        }
    }
    int rc = SL_OK;
    if (series > 0) {
        sl_buf_append_cstr(&script, "\n");
        sl_buf_append(&script, hist_plot.p, hist_plot.n);
        sl_buf_append_cstr(&script, "\nunset multiplot\n");
        char gp_path[128];
        snprintf(gp_path, sizeof(gp_path), "%s/plot.gp", dir);
        FILE *g = fopen(gp_path, "w");
        if (g != NULL) {
            fwrite(script.p, 1, script.n, g);
            fclose(g);
            char cmd[256];
            snprintf(cmd, sizeof(cmd), "gnuplot '%s'", gp_path);
            rc = system(cmd) == 0 ? SL_OK : SL_EIO;
        } else {
            rc = SL_EIO;
        }
    }
    char rm[128];
    snprintf(rm, sizeof(rm), "rm -rf '%s'", dir);
    if (system(rm) != 0) {
        rc = SL_EIO;
    }
    sl_buf_free(&script);
    sl_buf_free(&hist_plot);
    return rc;
}

/* ===== /proc ============================================================ */

int lt_proc_cpu_seconds(int pid, double *out)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/stat", pid);
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return SL_ENOTFOUND;
    }
    char line[1024];
    size_t n = fread(line, 1, sizeof(line) - 1, f);
    fclose(f);
    line[n] = '\0';
    /* The command name (field 2) may hold spaces; fields resume after the
     * last ')'. utime and stime are fields 14 and 15. */
    char *p = strrchr(line, ')');
    if (p == NULL) {
        return SL_EINVAL;
    }
    unsigned long long utime = 0;
    unsigned long long stime = 0;
    if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &utime, &stime) !=
        2) {
        return SL_EINVAL;
    }
    long hz = sysconf(_SC_CLK_TCK);
    *out = (double)(utime + stime) / (double)(hz > 0 ? hz : 100);
    return SL_OK;
}
