/*
 * gw_main.c -- the sluiced process: command line, configuration, the API
 * layer, the I/O threads, and signals.
 *
 * Threading: the main thread parses, loads, starts gw_server (which starts
 * the I/O threads), then runs a small libuv loop of its own that only
 * handles signals. SIGHUP re-reads the file here, off the I/O threads, and
 * swaps the snapshot into the holder; SIGTERM/SIGINT stop the server
 * (blocking this thread while the I/O threads drain), free the API layer
 * (which commits storage), and return 0.
 *
 * Ownership: gw_main owns the holder, the api, the TLS context and the
 * server, and frees them in reverse order of creation.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include <uv.h>

#include "cfg.h"
#include "gw.h"
#include "gw_act.h" /* struct gw_api: the engine, for the disk watermark */
#include "gw_api.h"
#include "gw_admin.h"
#include "gw_transport.h"

#define SHUTDOWN_GRACE_MS 10000 /* in-flight exchanges get this long to finish */
/* From the stop signal to exit, whatever happens: the loops' grace and
 * their hard deadline (10 s each, gw_server.c) and time for storage to
 * commit. Past it the process exits at once: every acknowledged write is
 * already committed, so nothing is lost that a crash would not also keep. */
#define SHUTDOWN_DEADLINE_MS 40000
/* Descriptors kept out of the connection cap: the partition files (database,
 * WAL, shared memory), the catalog, listeners, the loops' own handles. */
#define FD_RESERVE_BASE 64u
#define FD_RESERVE_PER_PARTITION 4u
#define DEFAULT_MAX_CONNECTIONS_CEILING 10000u
#define DEFAULT_MAX_CONNECTIONS_PER_PEER 1024u
/* The admin listener has caps of its own, so that a flood of the SQS port
 * cannot lock the operator out of /metrics; FD_RESERVE_BASE covers them. */
#define ADMIN_MAX_CONNECTIONS 32u
#define ADMIN_MAX_CONNECTIONS_PER_PEER 16u

struct process {
    const char *config_path; /* NULL = embedded default */
    struct cfg_holder *holder;
    struct gw_api *api;
    struct gw_connlimit *limits;       /* the SQS listener's */
    struct gw_connlimit *admin_limits; /* the admin listener's */
    struct gw_budget *budget;          /* the SQS listener's memory budgets */
    uint64_t fd_limit;
    uv_signal_t sigterm, sigint, sighup;
    int signum_stop;
};

static const char usage[] =
    "usage: sluiced [--config FILE | --check-config FILE | [--config FILE] --restore DIR |\n"
    "                --version | --help]\n"
    "\n"
    "  --config FILE        run with the YAML configuration in FILE\n"
    "  --check-config FILE  validate FILE: each problem as FILE:LINE:COLUMN: message;\n"
    "                       exit 0 when valid, 1 when not\n"
    "  --restore DIR        check the backup in DIR (sluicectl backup, POST /api/backup)\n"
    "                       against its manifest and put it in place as the\n"
    "                       configuration's data_dir, which must not hold data yet;\n"
    "                       then exit (start sluiced as usual afterwards)\n"
    "  --version            the version and the git commit this binary was built from\n"
    "  --help               this text\n"
    "\n"
    "Without arguments sluiced runs the embedded default configuration\n"
    "(listen 127.0.0.1:9324, data in ./sluice-data, tenant \"default\").\n"
    "Signals: SIGTERM/SIGINT stop gracefully; SIGHUP re-reads FILE.\n";

static void print_diags(const struct cfg_diags *d, FILE *f)
{
    for (size_t i = 0; i < d->count; i++)
        fprintf(f, "%s\n", d->items[i].text);
}

static int check_config(const char *path)
{
    struct cfg_snapshot *snap = NULL;
    struct cfg_diags diags = {0};
    int rv = cfg_load_file(path, &snap, &diags);
    print_diags(&diags, stderr);
    cfg_diags_free(&diags);
    if (rv != 0)
        return 1;
    cfg_snapshot_unref(snap);
    fprintf(stderr, "%s: configuration is valid\n", path);
    return 0;
}

static struct cfg_snapshot *load_config(const char *path)
{
    struct cfg_snapshot *snap = NULL;
    struct cfg_diags diags = {0};
    int rv;
    if (path != NULL) {
        rv = cfg_load_file(path, &snap, &diags);
    } else {
        const char *text = cfg_default_yaml();
        rv = cfg_load_string("<embedded default>", text, strlen(text), &snap, &diags);
    }
    for (size_t i = 0; i < diags.count; i++)
        sl_log(SL_LOG_ERROR, "main", "%s", diags.items[i].text);
    cfg_diags_free(&diags);
    return rv == 0 ? snap : NULL;
}

/* --restore: the backup in dir into the configuration's data_dir. */
static int restore(const char *config_path, const char *dir)
{
    struct cfg_snapshot *snap = load_config(config_path);
    if (snap == NULL) {
        return 1;
    }
    char err[1024];
    int rc = gw_backup_restore(dir, snap->data_dir, err, sizeof err);
    if (rc == SL_OK) {
        fprintf(stderr, "restored %s into %s; start sluiced to serve it\n", dir, snap->data_dir);
    } else {
        fprintf(stderr, "restore refused: %s\n", err);
    }
    cfg_snapshot_unref(snap);
    return rc == SL_OK ? 0 : 1;
}

/* ---- descriptors and connection caps -------------------------------------- */

/* Raises the soft descriptor limit to the hard one (what a server may use
 * without privileges) and returns the limit in force. */
static uint64_t raise_fd_limit(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 1024;
    if (rl.rlim_cur < rl.rlim_max) {
        rlim_t was = rl.rlim_cur;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) == 0)
            sl_log(SL_LOG_INFO, "main", "descriptor limit raised from %llu to %llu",
                   (unsigned long long)was, (unsigned long long)rl.rlim_cur);
        else
            rl.rlim_cur = was;
    }
    return rl.rlim_cur == RLIM_INFINITY ? UINT32_MAX : (uint64_t)rl.rlim_cur;
}

/* The default cap: three quarters of the descriptors that storage and the
 * process itself do not need, so that accept(2) does not reach EMFILE in
 * normal operation, and at most DEFAULT_MAX_CONNECTIONS_CEILING. */
static uint32_t default_max_connections(uint64_t fd_limit, uint32_t partitions)
{
    uint64_t reserve = FD_RESERVE_BASE + (uint64_t)FD_RESERVE_PER_PARTITION * partitions;
    uint64_t usable = fd_limit > reserve ? (fd_limit - reserve) * 3 / 4 : 1;
    return (uint32_t)SL_MAX(1, SL_MIN(usable, DEFAULT_MAX_CONNECTIONS_CEILING));
}

/* The caps in force: server.max_connections and _per_peer from the file,
 * or derived where they are 0 (docs/config.md). A cap above what the
 * descriptors allow is kept (the operator may raise the limit outside) but
 * said: past the descriptors, accept backs off on EMFILE instead. */
/* The memory budgets in force, as /metrics shows them. */
static void log_budgets(struct gw_budget *b, const char *prefix)
{
    struct gw_budget_stats st;
    gw__budget_stats(b, &st);
    sl_log(SL_LOG_INFO, "main", "%smemory budgets: %llu bytes of request bodies, %llu of responses",
           prefix, (unsigned long long)st.limit[GW_BUDGET_BODY],
           (unsigned long long)st.limit[GW_BUDGET_RESPONSE]);
}

static void connection_caps(const struct process *p, const struct cfg_snapshot *snap,
                            uint32_t *max_total, uint32_t *max_peer)
{
    uint32_t derived = default_max_connections(p->fd_limit, snap->partitions);
    *max_total = snap->server.max_connections != 0 ? snap->server.max_connections : derived;
    *max_peer = snap->server.max_connections_per_peer != 0
                    ? snap->server.max_connections_per_peer
                    : SL_MIN(*max_total, DEFAULT_MAX_CONNECTIONS_PER_PEER);
    if (*max_total > p->fd_limit)
        sl_log(SL_LOG_WARN, "main",
               "server.max_connections %u is above the descriptor limit %llu; past it, "
               "accept pauses instead",
               *max_total, (unsigned long long)p->fd_limit);
}

/* ---- shutdown deadline ---------------------------------------------------- */

static void *shutdown_watchdog(void *arg)
{
    (void)arg;
    struct timespec ts = {SHUTDOWN_DEADLINE_MS / 1000, (SHUTDOWN_DEADLINE_MS % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0) {
    }
    sl_log(SL_LOG_ERROR, "main",
           "shutdown did not finish within %d ms; exiting now (acknowledged writes are "
           "committed)",
           SHUTDOWN_DEADLINE_MS);
    _exit(1);
}

/* ---- SIGHUP ------------------------------------------------------------- */

static bool str_eq(const char *a, const char *b)
{
    return (a == NULL && b == NULL) || (a != NULL && b != NULL && strcmp(a, b) == 0);
}

/* Logs, in a few lines, what a reload changes for tenants. */
static void log_tenant_changes(const struct cfg_snapshot *old_s, const struct cfg_snapshot *new_s)
{
    for (size_t i = 0; i < new_s->tenant_count; i++) {
        const struct cfg_tenant *n = &new_s->tenants[i];
        const struct cfg_tenant *o = cfg_find_tenant(old_s, n->name, strlen(n->name));
        if (o == NULL) {
            sl_log(SL_LOG_INFO, "main", "reload: tenant %s added", n->name);
            continue;
        }
        if (!str_eq(o->access_key_id, n->access_key_id) ||
            !str_eq(o->secret_access_key, n->secret_access_key))
            sl_log(SL_LOG_INFO, "main", "reload: tenant %s: credentials changed", n->name);
        if (!cfg_limits_equal(&o->limits, &n->limits) || o->on_excess != n->on_excess ||
            o->spill.delay_seconds != n->spill.delay_seconds ||
            o->spill.aged_after_seconds != n->spill.aged_after_seconds)
            sl_log(SL_LOG_INFO, "main", "reload: tenant %s: limits changed", n->name);
        if (o->auto_create_queues != n->auto_create_queues)
            sl_log(SL_LOG_INFO, "main", "reload: tenant %s: auto_create_queues %s", n->name,
                   n->auto_create_queues ? "on" : "off");
    }
    for (size_t i = 0; i < old_s->tenant_count; i++) {
        const char *name = old_s->tenants[i].name;
        if (cfg_find_tenant(new_s, name, strlen(name)) == NULL)
            sl_log(SL_LOG_INFO, "main", "reload: tenant %s removed", name);
    }
}

/* Restart-only keys beyond cfg_restart_only_changes(): what the running
 * listeners and threads were built from. */
static void log_runtime_restart_changes(const struct cfg_snapshot *o, const struct cfg_snapshot *n)
{
    if (o->tls.enabled != n->tls.enabled || !str_eq(o->tls.cert_file, n->tls.cert_file) ||
        !str_eq(o->tls.key_file, n->tls.key_file))
        sl_log(SL_LOG_WARN, "main", "reload: tls changed; this needs a restart");
    if (o->admin.enabled != n->admin.enabled ||
        (n->admin.enabled && (o->admin.listen.port != n->admin.listen.port ||
                              !str_eq(o->admin.listen.host, n->admin.listen.host))))
        sl_log(SL_LOG_WARN, "main", "reload: admin.listen changed; this needs a restart");
    if (o->io_threads != n->io_threads)
        sl_log(SL_LOG_WARN, "main", "reload: io_threads changed; this needs a restart");
}

/* Returns SL_OK when the file is live, SL_EINVAL when it was refused. */
static int reload(struct process *p)
{
    if (p->config_path == NULL) {
        sl_log(SL_LOG_WARN, "main", "SIGHUP: running the embedded default, nothing to re-read");
        return SL_OK;
    }
    sl_log(SL_LOG_INFO, "main", "SIGHUP: re-reading %s", p->config_path);
    struct cfg_snapshot *next = load_config(p->config_path);
    if (next == NULL) {
        sl_log(SL_LOG_ERROR, "main", "reload refused: %s is invalid; the old configuration stays",
               p->config_path);
        return SL_EINVAL;
    }
    struct cfg_snapshot *cur = cfg_holder_get(p->holder);
    char restart[2048];
    if (cfg_restart_only_changes(cur, next, restart, sizeof(restart)) > 0)
        sl_log(SL_LOG_WARN, "main", "reload: needs a restart to take effect: %s", restart);
    log_runtime_restart_changes(cur, next);
    /* What was reported as needing a restart must not apply before it. */
    cfg_snapshot_keep_restart_only(next, cur);
    log_tenant_changes(cur, next);
    if (!cfg_limits_equal(&cur->default_limits, &next->default_limits))
        sl_log(SL_LOG_INFO, "main", "reload: default limits changed");
    if (cur->log_requests != next->log_requests)
        sl_log(SL_LOG_INFO, "main", "reload: request log %s", next->log_requests ? "on" : "off");
    if (!str_eq(cur->region, next->region))
        sl_log(SL_LOG_INFO, "main", "reload: region %s -> %s", cur->region, next->region);
    if (cur->server.max_connections != next->server.max_connections ||
        cur->server.max_connections_per_peer != next->server.max_connections_per_peer) {
        uint32_t max_total, max_peer;
        connection_caps(p, next, &max_total, &max_peer);
        gw__connlimit_set(p->limits, max_total, max_peer);
        sl_log(SL_LOG_INFO, "main", "reload: connections: at most %u, %u per peer address",
               max_total, max_peer);
    }
    if (cur->server.min_free_disk_bytes != next->server.min_free_disk_bytes) {
        part_engine_set_min_free(p->api->engine, next->server.min_free_disk_bytes);
        sl_log(SL_LOG_INFO, "main", "reload: sends refused below %llu free disk bytes",
               (unsigned long long)next->server.min_free_disk_bytes);
    }
    if (cur->server.request_body_budget_bytes != next->server.request_body_budget_bytes ||
        cur->server.response_budget_bytes != next->server.response_budget_bytes) {
        gw__budget_set(p->budget, next->server.request_body_budget_bytes,
                       next->server.response_budget_bytes);
        log_budgets(p->budget, "reload: ");
    }
    cfg_snapshot_unref(cur);

    cfg_holder_swap(p->holder, next); /* the holder owns next's reference now */
    struct cfg_snapshot *live = cfg_holder_get(p->holder);
    gw_api_config_changed(p->api, live);
    cfg_snapshot_unref(live);
    sl_log(SL_LOG_INFO, "main", "reload: configuration from %s is live (%zu tenants)",
           p->config_path, next->tenant_count);
    return SL_OK;
}

/* ---- signals ------------------------------------------------------------ */

static void on_signal(uv_signal_t *h, int signum)
{
    struct process *p = h->data;
    if (signum == SIGHUP) {
        /* systemd shows the unit "reloading" until READY=1; STATUS= keeps
         * a refusal visible in systemctl status, not only in the log. */
        sl_notify("RELOADING=1\nMONOTONIC_USEC=%llu", (unsigned long long)(sl_mono_ns() / 1000));
        if (reload(p) == SL_OK)
            sl_notify("READY=1\nSTATUS=serving; configuration reloaded");
        else
            sl_notify("READY=1\nSTATUS=serving; last reload refused (invalid file), old "
                      "configuration kept");
        return;
    }
    sl_notify("STOPPING=1");
    /* The handlers stay installed while the server drains: a second
     * SIGTERM must not kill the process before storage is committed. */
    p->signum_stop = signum;
    uv_stop(h->loop);
}

/* Stops the signal handles and closes their loop. */
static void close_signals(uv_loop_t *loop, uv_signal_t *const *handles, size_t n)
{
    for (size_t i = 0; i < n; i++)
        uv_close((uv_handle_t *)handles[i], NULL);
    uv_run(loop, UV_RUN_DEFAULT);
    uv_loop_close(loop);
}

/* ---- main --------------------------------------------------------------- */

static int run(struct process *p)
{
    int status = 1;
    char err[512] = "";
    struct cfg_snapshot *snap = load_config(p->config_path);
    if (snap == NULL) {
        sl_log(SL_LOG_ERROR, "main", "invalid configuration %s; not starting",
               p->config_path != NULL ? p->config_path : "<embedded default>");
        return 1;
    }
    sl_log(SL_LOG_INFO, "main", "sluiced %s (commit %s) starting with %s (%zu tenants)",
           sl_version(), sl_build_commit(), snap->source, snap->tenant_count);

    struct gw_tls_ctx *tls = NULL;
    if (snap->tls.enabled) {
        tls = gw__tls_ctx_new(snap->tls.cert_file, snap->tls.key_file, err, sizeof(err));
        if (tls == NULL) {
            sl_log(SL_LOG_ERROR, "main", "tls: %s", err);
            cfg_snapshot_unref(snap);
            return 1;
        }
    }
    p->holder = cfg_holder_new(cfg_snapshot_ref(snap));
    if (gw_api_new(p->holder, &p->api, err, sizeof(err)) != SL_OK) {
        sl_log(SL_LOG_ERROR, "main", "cannot start the API layer: %s", err);
        goto out_holder;
    }
    part_engine_set_min_free(p->api->engine, snap->server.min_free_disk_bytes);

    struct gw_listener_spec specs[2];
    size_t n = 0;
    specs[n++] = (struct gw_listener_spec){
        .name = "sqs",
        .host = snap->listen.host,
        .port = snap->listen.port,
        .handler = gw_api_sqs_handler(p->api),
    };
    if (snap->admin.enabled)
        specs[n++] = (struct gw_listener_spec){
            .name = "admin",
            .host = snap->admin.listen.host,
            .port = snap->admin.listen.port,
            .handler = gw_api_admin_handler(p->api),
        };
    unsigned threads = snap->io_threads != 0 ? snap->io_threads : uv_available_parallelism();
    uint32_t max_total, max_peer;
    connection_caps(p, snap, &max_total, &max_peer);
    p->limits = gw__connlimit_new(max_total, max_peer);
    p->admin_limits = gw__connlimit_new(ADMIN_MAX_CONNECTIONS, ADMIN_MAX_CONNECTIONS_PER_PEER);
    specs[0].limits = p->limits;
    if (n > 1)
        specs[1].limits = p->admin_limits;
    gw_api_set_connlimit(p->api, p->limits, p->admin_limits);
    p->budget =
        gw__budget_new(snap->server.request_body_budget_bytes, snap->server.response_budget_bytes);
    specs[0].budget = p->budget;
    gw_api_set_budget(p->api, p->budget);
    gw_api_set_config_path(p->api, p->config_path);
    log_budgets(p->budget, "");
    sl_log(SL_LOG_INFO, "main", "connections: at most %u, %u per peer address (%llu descriptors)",
           max_total, max_peer, (unsigned long long)p->fd_limit);
    /* The handlers go in before the listeners open: a client (or a test)
     * that sees the port may send SIGTERM at once, and the default action
     * would kill the process before storage is committed. A signal that
     * arrives before uv_run waits in libuv's pipe until then. */
    uv_loop_t loop;
    SL_ASSERT(uv_loop_init(&loop) == 0);
    uv_signal_t *handles[] = {&p->sigterm, &p->sigint, &p->sighup};
    int signums[] = {SIGTERM, SIGINT, SIGHUP};
    for (size_t i = 0; i < SL_ARRAY_LEN(handles); i++) {
        uv_signal_init(&loop, handles[i]);
        handles[i]->data = p;
        uv_signal_start(handles[i], on_signal, signums[i]);
    }
    struct gw_server *server = NULL;
    if (gw_server_start(specs, n, threads, tls, &server, err, sizeof(err)) != SL_OK) {
        sl_log(SL_LOG_ERROR, "main", "%s", err);
        close_signals(&loop, handles, SL_ARRAY_LEN(handles));
        goto out_api;
    }
    /* Ready only now: gw_api_new recovered the partitions and the listeners
     * accept, so a unit ordered after this one finds the gateway serving. */
    sl_notify("READY=1\nSTATUS=serving");
    uv_run(&loop, UV_RUN_DEFAULT); /* until SIGTERM or SIGINT */

    sl_log(SL_LOG_INFO, "main", "%s: shutting down (grace %d ms)",
           p->signum_stop == SIGINT ? "SIGINT" : "SIGTERM", SHUTDOWN_GRACE_MS);
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, shutdown_watchdog, NULL) == 0)
        pthread_detach(watchdog);
    /* A backup on the admin loop's pool would hold that loop, and so the
     * shutdown, for as long as its copy takes: stopped (and its partial
     * copy removed), it lets go within milliseconds. */
    gw_backup_stop();
    gw_server_stop(server, SHUTDOWN_GRACE_MS);
    gw_server_free(server);
    close_signals(&loop, handles, SL_ARRAY_LEN(handles));
    status = 0;
out_api:
    gw_api_free(p->api); /* commits and closes storage */
    p->api = NULL;
    gw__connlimit_free(p->limits); /* after the server: its connections held slots */
    gw__connlimit_free(p->admin_limits);
    p->limits = p->admin_limits = NULL;
    gw__budget_free(p->budget); /* after the server: its exchanges charged it */
    p->budget = NULL;
out_holder:
    cfg_holder_free(p->holder);
    p->holder = NULL;
    gw__tls_ctx_free(tls);
    cfg_snapshot_unref(snap);
    if (status == 0)
        sl_log(SL_LOG_INFO, "main", "stopped");
    return status;
}

int gw_main(int argc, char **argv)
{
    struct process p = {0};
    if (argc == 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        fputs(usage, stdout);
        return 0;
    }
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("sluiced %s (commit %s)\n", sl_version(), sl_build_commit());
        return 0;
    }
    if (argc == 3 && strcmp(argv[1], "--check-config") == 0)
        return check_config(argv[2]);
    if ((argc == 3 || argc == 5) && strcmp(argv[argc - 2], "--restore") == 0) {
        if (argc == 5 && strcmp(argv[1], "--config") != 0) {
            fputs(usage, stderr);
            return 2;
        }
        return restore(argc == 5 ? argv[2] : NULL, argv[argc - 1]);
    }
    if (argc == 3 && strcmp(argv[1], "--config") == 0) {
        p.config_path = argv[2];
    } else if (argc != 1) {
        fputs(usage, stderr);
        return 2;
    }
    /* A peer that vanishes mid-write must cost a write error, not the
     * process. */
    signal(SIGPIPE, SIG_IGN);
    p.fd_limit = raise_fd_limit();
    return run(&p);
}
