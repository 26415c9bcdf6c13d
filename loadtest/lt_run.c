/*
 * lt_run.c -- the scenarios of sluice-load.
 *
 * A run is a few groups; a group is one tenant's N connections x M flow
 * slots doing one role (send, receive+delete, long poll, or a raw action),
 * with its own bounds, schedule and statistics. A flow is one operation in
 * progress: one request, or a short chain (receive, then delete the batch).
 *
 *   send            one group: "send"
 *   receive-delete  "prefill" (if --prefill) then "consumers"
 *   roundtrip       "producers" and "consumers" together, same queues; with
 *                   --rate the producers run open loop and stamp bodies with
 *                   the intended send time, so e2e is free of coordinated
 *                   omission as well
 *   longpoll        "longpoll": each flow owns a queue, waits in a receive,
 *                   sends after --gap-ms and times the wake-up
 *   noisy           per tenant, a send group and a receive-delete group on
 *                   that tenant's own queues; the first tenant's sends flood
 *                   (--flood-rate), every other group runs at --rate
 *                   (receives at --receive-rate); --only flood|quiet drives
 *                   just the first tenant or just the others
 *   raw-action      "raw": the given action and JSON, repeated
 *
 * Phases: connect -> setup (CreateQueue for every queue) -> [prefill] ->
 * measure -> drain -> done. Results of a run are what lt_run fills into
 * struct lt_result.
 *
 * Open loop: a 1 ms pacer takes every due operation off the group's
 * schedule as long as a slot is free; an operation waiting for a slot is
 * still timed from its intended start (see lt_sched.c).
 *
 * Threading: one libuv loop on the calling thread.
 */
#include "lt_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#define PACER_MS 1
#define DRAIN_GRACE_NS (5ull * 1000000000ull)
#define COUNT_ONLY_CAP_NS (3600ull * 1000000000ull)

enum role { ROLE_SEND, ROLE_RECV_DELETE, ROLE_RAW, ROLE_LONGPOLL };
enum { REQ_MAIN, REQ_DELETE, REQ_LP_SEND, REQ_COUNT };

struct run;
struct group;

struct flow {
    struct group *g;
    bool busy;
    bool retired; /* its connection died */
    uint64_t intended_ns;
    unsigned pending; /* requests in flight, plus an armed timer */
    struct lt_req req[REQ_COUNT];
    uv_timer_t timer;
    bool timer_armed;
    size_t queue;
    uint64_t send_issued_ns;
    bool sent;
    struct lt_conn *conn;
    struct lt_conn *send_conn; /* longpoll: where the wake-up send goes */
};

struct group {
    struct run *run;
    struct lt_group_stats *stats;
    enum role role;
    struct lt_credentials cred;
    bool roundtrip;
    unsigned batch;
    struct lt_conn **conns;
    size_t conn_count;
    size_t flow_conn_count; /* the first ones carry the flows; see add_group */
    struct flow *flows;
    size_t flow_count;
    size_t *free_slots;
    size_t free_count;
    size_t busy;
    bool active;  /* begun, not stopped */
    bool stopped; /* starts no more flows */
    bool open_loop;
    struct lt_sched sched;
    uint64_t start_ns;
    uint64_t end_ns; /* 0 = no time bound */
    uint64_t last_done_ns;
    uint64_t last_message_ns; /* last reply that moved a message */
    uint64_t count_limit;
    uint64_t started;
    uint64_t expect_messages; /* consumers: stop once this many are deleted */
    struct group *feeder;     /* roundtrip consumers: the producers */
    char **queue_urls;
    size_t queue_count;
    bool owns_queues;
    struct group *queue_owner; /* !owns_queues: whose queues it uses */
    bool time_bound;           /* stops at --duration (not prefill, not roundtrip consumers) */
    bool prefill;
    size_t next_queue;
    struct lt_req *setup;
    size_t setup_count;
};

struct run {
    uv_loop_t loop;
    const struct lt_opts *o;
    struct lt_client *client;
    void *tls;
    struct group *groups;
    size_t group_count;
    struct lt_result *result;
    uv_timer_t pacer;
    uv_timer_t ticker;
    unsigned ticks;
    uint64_t t0_ns;
    uint64_t hard_end_ns;
    size_t conns_pending;
    size_t setup_pending;
    int phase; /* 0 connect, 1 setup, 2 prefill, 3 measure, 4 done */
    bool finishing;
    bool cpu_started;
    double cpu_start_s;
    char setup_error[256];
    int status;
    struct lt_fifo fifo;     /* --fifo-groups */
    struct lt_beyond beyond; /* --queue-kind */
};

static void group_pump(struct group *g);
static void flow_begin(struct group *g, struct flow *f, uint64_t intended_ns);
static void run_finish(struct run *run);

/* ===== bodies =========================================================== */

/* ===== accounting ======================================================= */

static bool req_ok(const struct lt_req *r)
{
    return r->status >= 200 && r->status < 300;
}

/* Counts a reply; returns true when it is a success. */
static bool account_reply(struct group *g, struct lt_req *r)
{
    struct lt_group_stats *s = g->stats;
    s->requests++;
    s->interval_requests++;
    g->last_done_ns = r->done_ns;
    if (req_ok(r)) {
        return true;
    }
    char code[LT_ERROR_CODE_MAX];
    struct sl_slice body = r->status == 0 ? sl_slice_cstr(r->transport_error)
                                          : (struct sl_slice){r->resp.p, r->resp.n};
    lt_error_code(r->status, r->query_error, body, code, sizeof(code));
    s->errors++;
    lt_errors_add(&s->error_codes, code);
    return false;
}

static void count_error(struct group *g, const char *code)
{
    g->stats->errors++;
    lt_errors_add(&g->stats->error_codes, code);
}

static void on_failed_entry(void *data, const char *code)
{
    count_error(data, code);
}

/* For batch replies: counts the successful entries, and each failed entry
 * as an error by its Code. */
static uint64_t account_batch(struct group *g, const struct lt_req *r)
{
    uint64_t ok = 0;
    if (lt_proto_batch(g->run->o->protocol, (struct sl_slice){r->resp.p, r->resp.n}, &ok,
                       on_failed_entry, g) != SL_OK) {
        count_error(g, "UnreadableReply");
    }
    return ok;
}

static void add_messages(struct group *g, uint64_t n, uint64_t done_ns)
{
    if (n > 0) {
        g->last_message_ns = done_ns;
    }
    g->stats->messages += n;
    g->stats->interval_messages += n;
}

/* ===== flows ============================================================ */

static void flow_end(struct flow *f)
{
    struct group *g = f->g;
    if (f->pending > 0) {
        return;
    }
    if (!g->run->finishing && g->role != ROLE_SEND && g->role != ROLE_RAW) {
        lt_group_stats_record(g->stats, LT_M_OP, lt_latency_us(f->intended_ns, sl_mono_ns()));
    }
    f->busy = false;
    g->busy--;
    if (!f->retired) {
        g->free_slots[g->free_count++] = (size_t)(f - g->flows);
    }
    if (!g->run->finishing) {
        group_pump(g);
    }
}

static bool flow_submit_on(struct flow *f, struct lt_conn *conn, struct lt_req *r)
{
    r->cred = &f->g->cred;
    r->data = f;
    if (lt_conn_submit(conn, r) != SL_OK) {
        f->retired = true;
        return false;
    }
    f->pending++;
    return true;
}

static bool flow_submit(struct flow *f, struct lt_req *r)
{
    return flow_submit_on(f, f->conn, r);
}

static void on_delete_done(struct lt_req *r)
{
    struct flow *f = r->data;
    struct group *g = f->g;
    f->pending--;
    if (!g->run->finishing && account_reply(g, r)) {
        lt_group_stats_record(g->stats, LT_M_DELETE, lt_latency_us(r->issued_ns, r->done_ns));
        add_messages(g, g->role == ROLE_LONGPOLL ? 1 : account_batch(g, r), r->done_ns);
    }
    flow_end(f);
}

struct received {
    struct group *g;
    bool record_e2e;
    uint64_t now_us;
    struct lt_delete_batch del;
};

static void on_message(void *data, struct sl_slice body, struct sl_slice receipt_handle)
{
    struct received *rc = data;
    uint64_t ts = lt_body_timestamp(body.p, body.n);
    if (rc->record_e2e && ts != 0) {
        lt_group_stats_record(rc->g->stats, LT_M_E2E, rc->now_us > ts ? rc->now_us - ts : 0);
    }
    lt_proto_delete_add(&rc->del, receipt_handle);
}

/* Receives: records e2e per message and deletes what came back in one
 * DeleteMessageBatch. Returns the number of messages. */
static size_t handle_receive(struct flow *f, struct lt_req *r, bool record_e2e)
{
    struct group *g = f->g;
    enum lt_protocol proto = g->run->o->protocol;
    struct lt_req *d = &f->req[REQ_DELETE];
    lt_req_reset(d);
    struct received rc = {g, record_e2e, sl_wall_us(), {0}};
    lt_proto_delete_begin(&rc.del, &d->body, proto, g->queue_urls[f->queue]);
    size_t n = 0;
    if (lt_proto_messages(proto, (struct sl_slice){r->resp.p, r->resp.n}, on_message, &rc, &n) !=
        SL_OK) {
        count_error(g, "UnreadableReply");
    }
    if (n == 0) {
        return 0;
    }
    lt_proto_delete_end(&rc.del);
    d->action = "DeleteMessageBatch";
    d->cb = on_delete_done;
    flow_submit(f, d);
    return n;
}

static void on_main_done(struct lt_req *r)
{
    struct flow *f = r->data;
    struct group *g = f->g;
    f->pending--;
    if (g->run->finishing) {
        flow_end(f);
        return;
    }
    bool ok = account_reply(g, r);
    uint64_t from_intended = lt_latency_us(f->intended_ns, r->done_ns);
    switch (g->role) {
    case ROLE_SEND:
        lt_group_stats_record(g->stats, LT_M_SEND, from_intended);
        lt_group_stats_record(g->stats, LT_M_OP, from_intended);
        if (ok) {
            add_messages(g, g->batch > 1 ? account_batch(g, r) : 1, r->done_ns);
        }
        break;
    case ROLE_RAW:
        lt_group_stats_record(g->stats, LT_M_OP, from_intended);
        break;
    case ROLE_RECV_DELETE:
        lt_group_stats_record(g->stats, LT_M_RECEIVE, from_intended);
        if (ok && g->run->o->fifo_groups > 0 &&
            lt_fifo_check(&g->run->fifo, (struct sl_slice){r->resp.p, r->resp.n},
                          &g->stats->fifo_checked, &g->stats->fifo_violations) != SL_OK) {
            count_error(g, "UnreadableFifoMessage");
        }
        if (ok && handle_receive(f, r, g->roundtrip) == 0) {
            g->stats->empty_receives++;
        }
        break;
    case ROLE_LONGPOLL:
        lt_group_stats_record(g->stats, LT_M_RECEIVE, lt_latency_us(r->issued_ns, r->done_ns));
        if (f->timer_armed) {
            uv_timer_stop(&f->timer);
            f->timer_armed = false;
            f->pending--;
        }
        if (ok && handle_receive(f, r, false) > 0) {
            if (f->sent) {
                lt_group_stats_record(g->stats, LT_M_WAKE,
                                      lt_latency_us(f->send_issued_ns, r->done_ns));
            }
        } else if (ok) {
            g->stats->empty_receives++;
        }
        break;
    }
    flow_end(f);
}

static void on_lp_send_done(struct lt_req *r)
{
    struct flow *f = r->data;
    struct group *g = f->g;
    f->pending--;
    if (!g->run->finishing && account_reply(g, r)) {
        lt_group_stats_record(g->stats, LT_M_SEND, lt_latency_us(r->issued_ns, r->done_ns));
    }
    flow_end(f);
}

static void on_lp_timer(uv_timer_t *t)
{
    struct flow *f = t->data;
    struct group *g = f->g;
    f->timer_armed = false;
    f->pending--;
    if (!g->run->finishing) {
        struct lt_req *s = &f->req[REQ_LP_SEND];
        lt_req_reset(s);
        lt_proto_send(&s->body, g->run->o->protocol, g->queue_urls[f->queue],
                      g->run->o->message_size, 1, sl_wall_us());
        s->action = "SendMessage";
        s->cb = on_lp_send_done;
        if (flow_submit_on(f, f->send_conn, s)) {
            f->sent = true;
            f->send_issued_ns = s->issued_ns;
        }
    }
    flow_end(f);
}

static void flow_begin(struct group *g, struct flow *f, uint64_t intended_ns)
{
    const struct lt_opts *o = g->run->o;
    f->busy = true;
    f->pending = 0;
    f->sent = false;
    f->intended_ns = intended_ns;
    g->busy++;
    g->started++;
    if (g->role == ROLE_LONGPOLL) {
        f->queue = (size_t)(f - g->flows) % g->queue_count;
    } else {
        f->queue = g->next_queue++ % g->queue_count;
    }
    const char *url = g->queue_urls[f->queue];
    struct lt_req *r = &f->req[REQ_MAIN];
    lt_req_reset(r);
    r->cb = on_main_done;
    switch (g->role) {
    case ROLE_SEND:
        if (o->fifo_groups > 0) {
            lt_fifo_body_send(&r->body, &g->run->fifo, url, o->message_size, g->batch,
                              lt_intended_wall_us(sl_wall_us(), sl_mono_ns(), intended_ns));
        } else if (o->queue_kind != LT_KIND_STANDARD) {
            lt_beyond_body_send(&r->body, &g->run->beyond, url, o->message_size, g->batch,
                                lt_intended_wall_us(sl_wall_us(), sl_mono_ns(), intended_ns));
        } else {
            lt_proto_send(&r->body, o->protocol, url, o->message_size, g->batch,
                          lt_intended_wall_us(sl_wall_us(), sl_mono_ns(), intended_ns));
        }
        r->action = g->batch > 1 ? "SendMessageBatch" : "SendMessage";
        break;
    case ROLE_RAW:
        lt_proto_raw(&r->body, o->protocol, o->raw_action, o->raw_json);
        r->action = o->raw_action;
        break;
    case ROLE_RECV_DELETE:
        if (o->fifo_groups > 0) {
            lt_fifo_body_receive(&r->body, url, 10, o->wait_s);
        } else {
            lt_proto_receive(&r->body, o->protocol, url, 10, o->wait_s);
        }
        r->action = "ReceiveMessage";
        break;
    case ROLE_LONGPOLL:
        lt_proto_receive(&r->body, o->protocol, url, 1, 20);
        r->action = "ReceiveMessage";
        break;
    }
    if (flow_submit(f, r) && g->role == ROLE_LONGPOLL) {
        uv_timer_start(&f->timer, on_lp_timer, o->gap_ms, 0);
        f->timer_armed = true;
        f->pending++;
    }
    if (f->pending == 0) {
        /* The connection is gone: this slot retires, its operation is an
         * error. */
        g->stats->errors++;
        lt_errors_add(&g->stats->error_codes, "transport:ConnectionDead");
    }
    flow_end(f);
}

/* ===== groups =========================================================== */

static bool group_done_starting(struct group *g, uint64_t now)
{
    if (g->end_ns != 0 && now >= g->end_ns) {
        return true;
    }
    if (g->count_limit != 0 && g->started >= g->count_limit) {
        return true;
    }
    if (g->expect_messages != 0 && g->stats->messages >= g->expect_messages) {
        return true;
    }
    if (g->feeder != NULL && g->feeder->stopped && g->feeder->busy == 0 &&
        g->stats->messages >= g->feeder->stats->messages) {
        return true; /* roundtrip: every message sent has been consumed */
    }
    if (g->feeder != NULL && g->feeder->stopped &&
        now >= g->feeder->last_done_ns + DRAIN_GRACE_NS) {
        return true;
    }
    return false;
}

static void group_stop(struct group *g, uint64_t now)
{
    if (g->stopped) {
        return;
    }
    g->stopped = true;
    if (g->open_loop) {
        uint64_t due = lt_sched_due(&g->sched, now);
        g->stats->unstarted = due;
    }
}

static void group_pump(struct group *g)
{
    if (!g->active || g->stopped) {
        return;
    }
    uint64_t now = sl_mono_ns();
    while (g->free_count > 0) {
        if (group_done_starting(g, now)) {
            group_stop(g, now);
            return;
        }
        uint64_t intended = now;
        if (g->open_loop) {
            uint64_t due = lt_sched_due(&g->sched, now);
            if (due == 0) {
                return;
            }
            g->stats->late_max = SL_MAX(g->stats->late_max, due);
            intended = lt_sched_take(&g->sched);
        }
        struct flow *f = &g->flows[g->free_slots[--g->free_count]];
        flow_begin(g, f, intended);
    }
    if (group_done_starting(g, now)) {
        group_stop(g, now);
    } else if (g->open_loop) {
        uint64_t due = lt_sched_due(&g->sched, now);
        g->stats->late_max = SL_MAX(g->stats->late_max, due);
    }
    if (g->free_count == 0 && g->busy == 0) {
        group_stop(g, now); /* every slot retired */
    }
}

/* Independent clients are not phase-locked: with every schedule starting
 * at the same instant, all the open-loop groups of a run would fire
 * together at each tick, and each one's latency would measure the queue
 * the others form in that instant (at 24 tenants x 5/s, a p50 ten times
 * the service time) rather than the server. The k-th of n open-loop
 * groups starts k/n of its period later; --arrivals lockstep keeps the
 * old behaviour. */
static uint64_t phase_ns(const struct group *g)
{
    const struct run *run = g->run;
    if (run->o->lockstep) {
        return 0;
    }
    size_t k = 0;
    size_t n = 0;
    for (size_t i = 0; i < run->group_count; i++) {
        if (run->groups[i].open_loop) {
            k += &run->groups[i] < g;
            n++;
        }
    }
    return lt_sched_phase_ns(g->stats->target_rate, k, n);
}

static void group_begin(struct group *g, uint64_t now)
{
    const struct lt_opts *o = g->run->o;
    g->active = true;
    g->start_ns = now;
    g->last_done_ns = now;
    if (o->duration_s > 0 && g->time_bound) {
        g->end_ns = now + (uint64_t)(o->duration_s * 1e9);
    }
    if (g->open_loop) {
        lt_sched_init(&g->sched, now + phase_ns(g), g->stats->target_rate);
    }
    group_pump(g);
}

/* ===== run: timers ====================================================== */

static bool all_idle(const struct run *run)
{
    for (size_t i = 0; i < run->group_count; i++) {
        const struct group *g = &run->groups[i];
        if (g->active && (!g->stopped || g->busy > 0)) {
            return false;
        }
    }
    return true;
}

static void begin_measure(struct run *run);

static void on_pacer(uv_timer_t *t)
{
    struct run *run = t->data;
    uint64_t now = sl_mono_ns();
    for (size_t i = 0; i < run->group_count; i++) {
        group_pump(&run->groups[i]);
    }
    if (run->phase == 2 && all_idle(run)) {
        begin_measure(run);
        return;
    }
    if (run->phase == 3 && (all_idle(run) || now >= run->hard_end_ns)) {
        run_finish(run);
    }
}

static void print_progress(struct run *run, double t)
{
    if (run->o->quiet) {
        return;
    }
    fprintf(stderr, "[%5.0fs]", t);
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (!g->active) {
            continue;
        }
        struct lt_group_stats *s = g->stats;
        struct lt_metric_stats *m = &s->m[LT_M_OP];
        fprintf(stderr, " %s: %" PRIu64 " req/s %" PRIu64 " msg/s p99 %.2f ms err %" PRIu64 " |",
                s->name, s->interval_requests, s->interval_messages,
                m->timeline_n ? (double)m->timeline[m->timeline_n - 1].p99_us / 1000.0 : 0.0,
                s->errors);
    }
    fputc('\n', stderr);
}

/* The timeline is sampled four times a second, so that a five-second run
 * still draws a curve; progress (per-second counts) prints every fourth. */
#define TIMELINE_MS 250
#define TICKS_PER_PROGRESS (1000 / TIMELINE_MS)

static void on_ticker(uv_timer_t *t)
{
    struct run *run = t->data;
    double secs = (double)(sl_mono_ns() - run->t0_ns) / 1e9;
    for (size_t i = 0; i < run->group_count; i++) {
        if (run->groups[i].active) {
            lt_group_stats_tick(run->groups[i].stats, secs);
        }
    }
    if (++run->ticks % TICKS_PER_PROGRESS != 0) {
        return;
    }
    print_progress(run, secs);
    for (size_t i = 0; i < run->group_count; i++) {
        run->groups[i].stats->interval_requests = 0;
        run->groups[i].stats->interval_messages = 0;
    }
}

static void on_flow_timer_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_run_timer_closed(uv_handle_t *h)
{
    (void)h;
}

static void run_finish(struct run *run)
{
    if (run->phase == 4) {
        return;
    }
    run->phase = 4;
    run->finishing = true;
    uint64_t now = sl_mono_ns();
    struct lt_result *res = run->result;
    if (run->cpu_started) {
        double end_s;
        if (lt_proc_cpu_seconds(run->o->server_pid, &end_s) == SL_OK) {
            res->have_cpu = true;
            res->server_pid = run->o->server_pid;
            res->server_cpu_s = end_s - run->cpu_start_s;
        }
    }
    res->elapsed_s = (double)(now - run->t0_ns) / 1e9;
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (g->active) {
            group_stop(g, now);
            g->stats->elapsed_s =
                lt_group_elapsed_s(g->start_ns, g->last_message_ns, g->last_done_ns, now);
        }
    }
    uv_timer_stop(&run->pacer);
    uv_timer_stop(&run->ticker);
    lt_client_free(run->client); /* fails what is still in flight; not counted */
    run->client = NULL;
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        for (size_t k = 0; k < g->flow_count; k++) {
            uv_timer_stop(&g->flows[k].timer);
            uv_close((uv_handle_t *)&g->flows[k].timer, on_flow_timer_closed);
        }
    }
    uv_close((uv_handle_t *)&run->pacer, on_run_timer_closed);
    uv_close((uv_handle_t *)&run->ticker, on_run_timer_closed);
}

static void begin_measure(struct run *run)
{
    run->phase = 3;
    uint64_t now = sl_mono_ns();
    run->t0_ns = now;
    uint64_t bound =
        run->o->duration_s > 0 ? (uint64_t)(run->o->duration_s * 1e9) : COUNT_ONLY_CAP_NS;
    run->hard_end_ns = now + bound + DRAIN_GRACE_NS + 21ull * 1000000000ull;
    if (run->o->server_pid > 0 &&
        lt_proc_cpu_seconds(run->o->server_pid, &run->cpu_start_s) == SL_OK) {
        run->cpu_started = true;
    }
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (g->prefill) {
            g->stats->elapsed_s =
                lt_group_elapsed_s(g->start_ns, g->last_message_ns, g->last_done_ns, now);
            g->active = false;
            continue;
        }
        group_begin(g, now);
    }
    uv_timer_start(&run->ticker, on_ticker, TIMELINE_MS, TIMELINE_MS);
}

/* ===== run: setup ======================================================= */

static void begin_after_setup(struct run *run)
{
    if (run->setup_error[0] != '\0') {
        run->status = SL_ECLOSED;
        snprintf(run->result->setup_error, sizeof(run->result->setup_error), "%s",
                 run->setup_error);
        run_finish(run);
        return;
    }
    uv_timer_start(&run->pacer, on_pacer, PACER_MS, PACER_MS);
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (g->prefill) {
            run->phase = 2;
            group_begin(g, sl_mono_ns());
            return;
        }
    }
    begin_measure(run);
}

static void on_setup_done(struct lt_req *r)
{
    struct group *g = r->data;
    struct run *run = g->run;
    size_t i = (size_t)(r - g->setup);
    if (req_ok(r)) {
        struct sl_buf url;
        sl_buf_init(&url);
        if (lt_proto_queue_url(run->o->protocol, (struct sl_slice){r->resp.p, r->resp.n}, &url) ==
            SL_OK) {
            g->queue_urls[i] = sl_buf_take(&url, NULL);
        }
        sl_buf_free(&url);
    }
    if (g->queue_urls[i] == NULL && run->setup_error[0] == '\0') {
        char code[LT_ERROR_CODE_MAX];
        struct sl_slice body = r->status == 0 ? sl_slice_cstr(r->transport_error)
                                              : (struct sl_slice){r->resp.p, r->resp.n};
        lt_error_code(r->status, r->query_error, body, code, sizeof(code));
        snprintf(run->setup_error, sizeof(run->setup_error),
                 "CreateQueue failed for tenant %s: %s (HTTP %d)", g->cred.access_key_id, code,
                 r->status);
    }
    if (--run->setup_pending == 0 && !run->finishing) {
        begin_after_setup(run);
    }
}

static void queue_name(const struct run *run, const struct group *g, size_t i, char *out,
                       size_t cap)
{
    const char *suffix = g->role == ROLE_LONGPOLL ? "-lp" : "";
    snprintf(out, cap, "%s%s-%zu%s", run->o->queue_prefix, suffix, i,
             run->o->fifo_groups > 0 ? ".fifo" : "");
}

static void begin_setup(struct run *run)
{
    run->phase = 1;
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (!g->owns_queues || g->role == ROLE_RAW) {
            continue;
        }
        SL_ASSERT(g->conn_count > 0); /* add_group: at least one connection */
        g->setup = sl_xcalloc(g->queue_count, sizeof(*g->setup));
        for (size_t q = 0; q < g->queue_count; q++) {
            struct lt_req *r = &g->setup[q];
            lt_req_init(r);
            char name[128];
            queue_name(run, g, q, name, sizeof(name));
            if (run->o->fifo_groups > 0) {
                lt_fifo_body_create(&r->body, name);
            } else if (run->o->queue_kind != LT_KIND_STANDARD) {
                lt_beyond_body_create(&r->body, run->o->queue_kind, name);
            } else {
                lt_proto_create_queue(&r->body, run->o->protocol, name);
            }
            r->action = "CreateQueue";
            r->cred = &g->cred;
            r->cb = on_setup_done;
            r->data = g;
            if (lt_conn_submit(g->conns[q % g->conn_count], r) == SL_OK) {
                run->setup_pending++;
            } else if (run->setup_error[0] == '\0') {
                snprintf(run->setup_error, sizeof(run->setup_error), "connection lost in setup");
            }
        }
    }
    if (run->setup_pending == 0) {
        begin_after_setup(run);
    }
}

static void on_conn_ready(struct lt_conn *c, int status, void *data)
{
    struct run *run = data;
    if (status != SL_OK && run->setup_error[0] == '\0') {
        snprintf(run->setup_error, sizeof(run->setup_error), "cannot connect to %s (HTTP/%s%s)",
                 run->o->authority, run->o->http1 ? "1.1" : "2",
                 run->o->tls ? " over TLS" : " cleartext");
        run->status = SL_EIO;
    }
    if (--run->conns_pending == 0) {
        if (run->setup_error[0] != '\0') {
            snprintf(run->result->setup_error, sizeof(run->result->setup_error), "%s",
                     run->setup_error);
            run_finish(run);
            return;
        }
        begin_setup(run);
    }
}

/* ===== run: building the groups ========================================= */

static struct group *add_group(struct run *run, const char *name, const struct lt_tenant *t,
                               enum role role, unsigned streams, double rate)
{
    const struct lt_opts *o = run->o;
    size_t idx = run->group_count++;
    struct group *g = &run->groups[idx];
    struct lt_group_stats *s = &run->result->groups[idx];
    run->result->group_count = run->group_count;
    memset(g, 0, sizeof(*g));
    lt_group_stats_init(s, name, t->access_key_id);
    static const char *const role_names[] = {
        [ROLE_SEND] = "send",
        [ROLE_RECV_DELETE] = "receive-delete",
        [ROLE_RAW] = "raw",
        [ROLE_LONGPOLL] = "longpoll",
    };
    snprintf(s->role, sizeof(s->role), "%s", role_names[role]);
    s->target_rate = rate;
    g->run = run;
    g->stats = s;
    g->role = role;
    g->batch = o->batch;
    g->cred = (struct lt_credentials){t->access_key_id, t->secret, o->region, "sqs"};
    g->open_loop = rate > 0;
    g->count_limit = o->count;
    /* Over HTTP/1.1 a long poll holds its connection until it is answered
     * (replies come in order), so the send that wakes it goes on a
     * connection of its own. */
    g->flow_conn_count = o->connections;
    g->conn_count = o->http1 && role == ROLE_LONGPOLL ? 2 * g->flow_conn_count : g->flow_conn_count;
    g->conns = sl_xcalloc(g->conn_count, sizeof(*g->conns));
    g->flow_count = (size_t)o->connections * streams;
    g->flows = sl_xcalloc(g->flow_count, sizeof(*g->flows));
    g->free_slots = sl_xcalloc(g->flow_count, sizeof(*g->free_slots));
    for (size_t i = 0; i < g->flow_count; i++) {
        struct flow *f = &g->flows[i];
        f->g = g;
        for (int k = 0; k < REQ_COUNT; k++) {
            lt_req_init(&f->req[k]);
        }
        uv_timer_init(&run->loop, &f->timer);
        f->timer.data = f;
        g->free_slots[g->free_count++] = g->flow_count - 1 - i;
    }
    g->owns_queues = true;
    g->time_bound = true;
    g->queue_count = role == ROLE_LONGPOLL ? g->flow_count : o->queues;
    g->queue_urls = sl_xcalloc(g->queue_count, sizeof(*g->queue_urls));
    return g;
}

static void share_queues(struct group *dst, struct group *src)
{
    free(dst->queue_urls);
    dst->owns_queues = false;
    dst->queue_owner = src;
    dst->queue_urls = NULL;
    dst->queue_count = src->queue_count;
    dst->feeder = NULL;
}

static void build_groups(struct run *run)
{
    const struct lt_opts *o = run->o;
    size_t max = 2 * o->tenant_count + 2;
    run->groups = sl_xcalloc(max, sizeof(*run->groups));
    run->result->groups = sl_xcalloc(max, sizeof(*run->result->groups));
    const struct lt_tenant *t0 = &o->tenants[0];
    struct group *p;
    struct group *c;
    switch (o->scenario) {
    case LT_SC_SEND:
        add_group(run, "send", t0, ROLE_SEND, o->streams, o->rate);
        break;
    case LT_SC_RAW:
        add_group(run, "raw", t0, ROLE_RAW, o->streams, o->rate);
        run->groups[0].owns_queues = false;
        run->groups[0].queue_count = 1;
        run->groups[0].queue_urls[0] = sl_xstrdup("");
        break;
    case LT_SC_RECEIVE_DELETE:
        if (o->prefill > 0) {
            p = add_group(run, "prefill", t0, ROLE_SEND, o->streams, 0);
            p->batch = 10;
            p->prefill = true;
            p->time_bound = false;
            p->count_limit = (o->prefill + 9) / 10;
            c = add_group(run, "consumers", t0, ROLE_RECV_DELETE, o->streams, o->rate);
            c->expect_messages = o->prefill;
            share_queues(c, p);
        } else {
            add_group(run, "consumers", t0, ROLE_RECV_DELETE, o->streams, o->rate);
        }
        break;
    case LT_SC_ROUNDTRIP:
        p = add_group(run, "producers", t0, ROLE_SEND, o->streams, o->rate);
        c = add_group(run, "consumers", t0, ROLE_RECV_DELETE, o->consumer_streams, 0);
        c->roundtrip = true;
        c->time_bound = false;
        c->count_limit = 0;
        share_queues(c, p);
        c->feeder = p;
        break;
    case LT_SC_LONGPOLL:
        add_group(run, "longpoll", t0, ROLE_LONGPOLL, o->streams, o->rate);
        break;
    case LT_SC_NOISY:
        /* Each tenant receives from its own queues at the same rate in
         * every run, so the quiet tenants' receive latency shows what the
         * flooder's sends do to the partitions they share. */
        for (size_t i = 0; i < o->tenant_count; i++) {
            if (!lt_opts_drives_tenant(o, i)) {
                continue;
            }
            const struct lt_tenant *t = &o->tenants[i];
            const char *kind = i == 0 ? "flood" : "quiet";
            char name[96];
            snprintf(name, sizeof(name), "%s:%s/send", kind, t->access_key_id);
            p = add_group(run, name, t, ROLE_SEND, o->streams, i == 0 ? o->flood_rate : o->rate);
            snprintf(name, sizeof(name), "%s:%s/recv", kind, t->access_key_id);
            c = add_group(run, name, t, ROLE_RECV_DELETE, o->streams,
                          i == 0 ? o->flood_receive_rate : o->receive_rate);
            share_queues(c, p);
        }
        break;
    }
}

/* Groups that share queues borrow their owner's URL array (its entries
 * are filled in by setup, the array itself exists from add_group on). */
static void link_shared_queues(struct run *run)
{
    for (size_t i = 1; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        if (!g->owns_queues && g->queue_urls == NULL) {
            g->queue_urls = g->queue_owner->queue_urls;
        }
    }
}

static void free_groups(struct run *run)
{
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        for (size_t k = 0; k < g->flow_count; k++) {
            for (int j = 0; j < REQ_COUNT; j++) {
                lt_req_fini(&g->flows[k].req[j]);
            }
        }
        if (g->owns_queues || g->role == ROLE_RAW) {
            for (size_t q = 0; q < g->queue_count; q++) {
                free(g->queue_urls[q]);
            }
            free(g->queue_urls);
        }
        if (g->setup != NULL) {
            for (size_t q = 0; q < g->queue_count; q++) {
                lt_req_fini(&g->setup[q]);
            }
            free(g->setup);
        }
        free(g->flows);
        free(g->free_slots);
        free(g->conns);
    }
    free(run->groups);
}

int lt_run(const struct lt_opts *o, struct lt_result *res)
{
    memset(res, 0, sizeof(*res));
    res->opts = o;
    struct run *run = sl_xcalloc(1, sizeof(*run));
    run->o = o;
    run->result = res;
    run->status = SL_OK;
    uv_loop_init(&run->loop);
    if (o->tls) {
        char err[256];
        run->tls = lt_tls_ctx_new(o, err, sizeof(err));
        if (run->tls == NULL) {
            fprintf(stderr, "sluice-load: %s\n", err);
            uv_loop_close(&run->loop);
            free(run);
            return SL_EINVAL;
        }
    }
    run->beyond = (struct lt_beyond){.kind = o->queue_kind, .keys = o->exclusive_keys};
    if (o->fifo_groups > 0) {
        lt_fifo_init(&run->fifo, o->fifo_groups, sl_wall_us());
    }
    run->client = lt_client_new(&run->loop, o, run->tls);
    build_groups(run);
    link_shared_queues(run);
    uv_timer_init(&run->loop, &run->pacer);
    run->pacer.data = run;
    uv_timer_init(&run->loop, &run->ticker);
    run->ticker.data = run;
    run->t0_ns = sl_mono_ns();
    run->conns_pending = 1; /* held until every open is issued */
    for (size_t i = 0; i < run->group_count; i++) {
        struct group *g = &run->groups[i];
        for (size_t k = 0; k < g->conn_count; k++) {
            run->conns_pending++;
            g->conns[k] = lt_conn_open(run->client, on_conn_ready, run);
        }
        for (size_t k = 0; k < g->flow_count; k++) {
            size_t ci = k % g->flow_conn_count;
            g->flows[k].conn = g->conns[ci];
            g->flows[k].send_conn = g->conns[g->conn_count - g->flow_conn_count + ci];
        }
    }
    on_conn_ready(NULL, SL_OK, run);
    uv_run(&run->loop, UV_RUN_DEFAULT);
    int status = run->status;
    free_groups(run);
    lt_fifo_fini(&run->fifo);
    uv_loop_close(&run->loop);
    lt_tls_ctx_free(run->tls);
    free(run);
    return status;
}

void lt_result_fini(struct lt_result *r)
{
    for (size_t i = 0; i < r->group_count; i++) {
        lt_group_stats_fini(&r->groups[i]);
    }
    free(r->groups);
    r->groups = NULL;
    r->group_count = 0;
}
