/*
 * lt_opts.c -- the command line of sluice-load. Every run is bounded (by
 * --duration, --count or both) and aimed at loopback unless the operator
 * says --allow-remote: a load generator must not be able to flood a
 * machine by accident.
 *
 * Ownership: struct lt_opts owns its strings; lt_opts_fini() frees them.
 */
#include "lt_int.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

static const char *const noisy_parts[] = {
    [LT_NOISY_BOTH] = "both",
    [LT_NOISY_FLOOD] = "flood",
    [LT_NOISY_QUIET] = "quiet",
};
static const char *const arrivals[] = {"staggered", "lockstep"}; /* lockstep: 1 */

/* The index of arg among the n names, or n when it is none of them. */
static size_t name_index(const char *const *names, size_t n, const char *arg)
{
    size_t i = 0;
    while (i < n && strcmp(arg, names[i]) != 0) {
        i++;
    }
    return i;
}

static const struct {
    const char *name;
    enum lt_scenario sc;
} scenarios[] = {
    {"send", LT_SC_SEND},           {"receive-delete", LT_SC_RECEIVE_DELETE},
    {"roundtrip", LT_SC_ROUNDTRIP}, {"longpoll", LT_SC_LONGPOLL},
    {"noisy", LT_SC_NOISY},         {"raw-action", LT_SC_RAW},
};

enum {
    OPT_TARGET = 256,
    OPT_ALLOW_REMOTE,
    OPT_TLS,
    OPT_CACERT,
    OPT_REGION,
    OPT_CONSUMER_STREAMS,
    OPT_RATE,
    OPT_FLOOD_RATE,
    OPT_RECEIVE_RATE,
    OPT_FLOOD_RECEIVE_RATE,
    OPT_ARRIVALS,
    OPT_ONLY,
    OPT_BATCH,
    OPT_SIZE,
    OPT_TENANTS,
    OPT_QUEUES,
    OPT_QUEUE_PREFIX,
    OPT_WAIT,
    OPT_PREFILL,
    OPT_GAP_MS,
    OPT_FIFO_GROUPS,
    OPT_QUEUE_KIND,
    OPT_KEYS,
    OPT_JSON,
    OPT_PLOT,
    OPT_SERVER_PID,
    OPT_PRINT_SIGNED,
    OPT_HTTP1,
    OPT_HTTP_VERSION,
    OPT_PROTOCOL,
};

static const struct option long_opts[] = {
    {"target", required_argument, NULL, OPT_TARGET},
    {"allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE},
    {"tls", no_argument, NULL, OPT_TLS},
    {"cacert", required_argument, NULL, OPT_CACERT},
    {"region", required_argument, NULL, OPT_REGION},
    {"connections", required_argument, NULL, 'c'},
    {"streams", required_argument, NULL, 'm'},
    {"consumer-streams", required_argument, NULL, OPT_CONSUMER_STREAMS},
    {"duration", required_argument, NULL, 'd'},
    {"count", required_argument, NULL, 'n'},
    {"rate", required_argument, NULL, OPT_RATE},
    {"flood-rate", required_argument, NULL, OPT_FLOOD_RATE},
    {"receive-rate", required_argument, NULL, OPT_RECEIVE_RATE},
    {"flood-receive-rate", required_argument, NULL, OPT_FLOOD_RECEIVE_RATE},
    {"arrivals", required_argument, NULL, OPT_ARRIVALS},
    {"only", required_argument, NULL, OPT_ONLY},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"size", required_argument, NULL, OPT_SIZE},
    {"tenants", required_argument, NULL, OPT_TENANTS},
    {"queues", required_argument, NULL, OPT_QUEUES},
    {"queue-prefix", required_argument, NULL, OPT_QUEUE_PREFIX},
    {"wait", required_argument, NULL, OPT_WAIT},
    {"prefill", required_argument, NULL, OPT_PREFILL},
    {"gap-ms", required_argument, NULL, OPT_GAP_MS},
    {"fifo-groups", required_argument, NULL, OPT_FIFO_GROUPS},
    {"queue-kind", required_argument, NULL, OPT_QUEUE_KIND},
    {"keys", required_argument, NULL, OPT_KEYS},
    {"json", required_argument, NULL, OPT_JSON},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"server-pid", required_argument, NULL, OPT_SERVER_PID},
    {"quiet", no_argument, NULL, 'q'},
    {"print-signed-headers", no_argument, NULL, OPT_PRINT_SIGNED},
    {"http1", no_argument, NULL, OPT_HTTP1},
    {"http-version", required_argument, NULL, OPT_HTTP_VERSION},
    {"protocol", required_argument, NULL, OPT_PROTOCOL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

void lt_opts_usage(FILE *out)
{
    fputs(
        "usage: sluice-load SCENARIO [options]\n"
        "       sluice-load raw-action ACTION JSON|FORM [options]\n"
        "       sluice-load --print-signed-headers ACTION JSON [--target H:P] [--tenants K:S]\n"
        "       sluice-load --version\n"
        "scenarios: send | receive-delete | roundtrip | longpoll | noisy | raw-action\n"
        "  --target HOST:PORT     gateway (default 127.0.0.1:9324); loopback only unless\n"
        "  --allow-remote         is given\n"
        "  --tls [--cacert FILE]  TLS with ALPN h2 (http/1.1 with --http1; no verification\n"
        "                         without --cacert)\n"
        "  --http1                HTTP/1.1 keep-alive instead of HTTP/2 (same as\n"
        "  --http-version 1.1     --http-version 1.1; 2 is the default): each flow has\n"
        "                         at most one request out, pipelined in order on its\n"
        "                         connection, so -m 1 means no pipelining\n"
        "  --protocol json|query  AWS JSON 1.0 (default) or the query protocol (form\n"
        "                         bodies, XML replies); raw-action takes form parameters\n"
        "  --region R             SigV4 region (default us-east-1)\n"
        "  -c, --connections N    connections per group (default 1)\n"
        "  -m, --streams M        concurrent streams (flows) per connection (default 16)\n"
        "  --consumer-streams M   roundtrip: streams per consumer connection (default M)\n"
        "  -d, --duration S       stop after S seconds\n"
        "  -n, --count N          stop after N operations per group (at least one bound)\n"
        "  --rate R               open loop: R operations/s per group, latency from the\n"
        "                         intended start; without it, closed loop (max throughput);\n"
        "                         roundtrip: the producers' rate (consumers stay closed\n"
        "                         loop) and e2e runs from the intended send time too\n"
        "  --flood-rate R         noisy: send rate of the first tenant (default 10 x --rate)\n"
        "  --receive-rate R       noisy: receive+delete rate of every tenant (default --rate)\n"
        "  --flood-receive-rate R noisy: receive+delete rate of the first tenant (default\n"
        "                         --receive-rate)\n"
        "  --only flood|quiet     noisy: drive only the first tenant (flood) or only the\n"
        "                         others (quiet), so that each role gets a client process\n"
        "                         of its own; give both processes the same --tenants\n"
        "                         (default both: one process drives every tenant)\n"
        "  --arrivals staggered|lockstep  open loop: the k-th of n groups starts k/n\n"
        "                         of its period late (staggered, default), or all at\n"
        "                         once, every tick together (lockstep)\n"
        "  --batch 1|10           send with SendMessage or SendMessageBatch of 10\n"
        "  --size BYTES           message body size (default 1024, minimum 32)\n"
        "  --tenants K:S[,K:S..]  access key:secret per tenant (default default:default)\n"
        "  --queues N             queues per tenant (default 1)\n"
        "  --queue-prefix NAME    queue name prefix (default sluice-load)\n"
        "  --wait S               ReceiveMessage WaitTimeSeconds (receive-delete 0, roundtrip 1)\n"
        "  --prefill N            receive-delete: send N messages first, stop once drained\n"
        "  --gap-ms MS            longpoll: how long the receive waits before the send (20)\n"
        "  --fifo-groups N        send, receive-delete, roundtrip: high-throughput FIFO\n"
        "                         queues (NAME.fifo), sends spread over N message groups;\n"
        "                         receives check each group's SequenceNumbers increase\n"
        "  --queue-kind K         send, receive-delete, roundtrip over --protocol json:\n"
        "                         standard (default), priority (SluicePriority, sends\n"
        "                         spread over priorities 0..999) or exclusive\n"
        "                         (SluiceExclusivityKey, sends over --keys N values)\n"
        "  --keys N               exclusive: key values (default 1000)\n"
        "  --json FILE            write the JSON record\n"
        "  --plot FILE.png        latency over time and histogram (gnuplot)\n"
        "  --server-pid PID       report the gateway's CPU time per request and message\n"
        "  -q, --quiet            no progress on stderr\n"
        "  -h, --help             this text\n",
        out);
}

void lt_opts_init(struct lt_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->scenario = LT_SC_SEND;
    o->scenario_name = "send";
    o->host = sl_xstrdup("127.0.0.1");
    o->port = 9324;
    o->authority = sl_xstrdup("127.0.0.1:9324");
    o->region = sl_xstrdup("us-east-1");
    o->connections = 1;
    o->streams = 16;
    o->batch = 1;
    o->exclusive_keys = 1000;
    o->message_size = 1024;
    o->queues = 1;
    o->queue_prefix = sl_xstrdup("sluice-load");
    o->wait_s = -1;
    o->gap_ms = 20;
}

static void free_tenants(struct lt_opts *o)
{
    for (size_t i = 0; i < o->tenant_count; i++) {
        free(o->tenants[i].access_key_id);
        free(o->tenants[i].secret);
    }
    free(o->tenants);
    o->tenants = NULL;
    o->tenant_count = 0;
}

void lt_opts_fini(struct lt_opts *o)
{
    free(o->raw_action);
    free(o->raw_json);
    free(o->host);
    free(o->authority);
    free(o->cacert);
    free(o->region);
    free(o->queue_prefix);
    free(o->json_path);
    free(o->plot_path);
    free_tenants(o);
}

static void replace(char **slot, const char *v)
{
    free(*slot);
    *slot = sl_xstrdup(v);
}

static int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || s[0] == '-' || v > max) {
        return SL_EINVAL;
    }
    *out = v;
    return SL_OK;
}

static int parse_double(const char *s, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || !(v >= 0) || v > 1e9) {
        return SL_EINVAL;
    }
    *out = v;
    return SL_OK;
}

static int parse_target(struct lt_opts *o, const char *v)
{
    const char *colon = strrchr(v, ':');
    uint64_t port;
    if (colon == NULL || colon == v || parse_u64(colon + 1, 65535, &port) != SL_OK || port == 0) {
        return SL_EINVAL;
    }
    free(o->host);
    o->host = sl_xstrndup(v, (size_t)(colon - v));
    o->port = (int)port;
    replace(&o->authority, v);
    return SL_OK;
}

static int parse_tenants(struct lt_opts *o, const char *v)
{
    free_tenants(o);
    char *copy = sl_xstrdup(v);
    char *save = NULL;
    int rc = SL_OK;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon == NULL || colon == tok || colon[1] == '\0') {
            rc = SL_EINVAL;
            break;
        }
        o->tenants = sl_xrealloc(o->tenants, (o->tenant_count + 1) * sizeof(*o->tenants));
        o->tenants[o->tenant_count].access_key_id = sl_xstrndup(tok, (size_t)(colon - tok));
        o->tenants[o->tenant_count].secret = sl_xstrdup(colon + 1);
        o->tenant_count++;
    }
    free(copy);
    if (rc == SL_OK && o->tenant_count == 0) {
        rc = SL_EINVAL;
    }
    return rc;
}

static bool is_loopback(const char *host)
{
    return strcmp(host, "localhost") == 0 || strncmp(host, "127.", 4) == 0 ||
           strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        snprintf(err, errlen, __VA_ARGS__);                                                        \
        return SL_EINVAL;                                                                          \
    } while (0)

static int apply(struct lt_opts *o, int c, const char *arg, char *err, size_t errlen)
{
    uint64_t u;
    switch (c) {
    case OPT_TARGET:
        if (parse_target(o, arg) != SL_OK) {
            FAIL("--target wants HOST:PORT, got '%s'", arg);
        }
        break;
    case OPT_ALLOW_REMOTE:
        o->allow_remote = true;
        break;
    case OPT_TLS:
        o->tls = true;
        break;
    case OPT_CACERT:
        replace(&o->cacert, arg);
        break;
    case OPT_REGION:
        replace(&o->region, arg);
        break;
    case 'c':
        if (parse_u64(arg, 10000, &u) != SL_OK || u == 0) {
            FAIL("--connections wants 1..10000");
        }
        o->connections = (unsigned)u;
        break;
    case 'm':
        if (parse_u64(arg, 10000, &u) != SL_OK || u == 0) {
            FAIL("--streams wants 1..10000");
        }
        o->streams = (unsigned)u;
        break;
    case OPT_CONSUMER_STREAMS:
        if (parse_u64(arg, 10000, &u) != SL_OK || u == 0) {
            FAIL("--consumer-streams wants 1..10000");
        }
        o->consumer_streams = (unsigned)u;
        break;
    case 'd':
        if (parse_double(arg, &o->duration_s) != SL_OK || o->duration_s <= 0) {
            FAIL("--duration wants a positive number of seconds");
        }
        break;
    case 'n':
        if (parse_u64(arg, UINT64_MAX / 2, &o->count) != SL_OK || o->count == 0) {
            FAIL("--count wants a positive integer");
        }
        break;
    case OPT_RATE:
        if (parse_double(arg, &o->rate) != SL_OK || o->rate <= 0) {
            FAIL("--rate wants a positive number per second");
        }
        break;
    case OPT_FLOOD_RATE:
        if (parse_double(arg, &o->flood_rate) != SL_OK || o->flood_rate <= 0) {
            FAIL("--flood-rate wants a positive number per second");
        }
        break;
    case OPT_RECEIVE_RATE:
        if (parse_double(arg, &o->receive_rate) != SL_OK || o->receive_rate <= 0) {
            FAIL("--receive-rate wants a positive number per second");
        }
        break;
    case OPT_FLOOD_RECEIVE_RATE:
        if (parse_double(arg, &o->flood_receive_rate) != SL_OK || o->flood_receive_rate <= 0) {
            FAIL("--flood-receive-rate wants a positive number per second");
        }
        break;
    case OPT_ARRIVALS: {
        size_t i = name_index(arrivals, SL_ARRAY_LEN(arrivals), arg);
        if (i == SL_ARRAY_LEN(arrivals)) {
            FAIL("--arrivals is staggered or lockstep");
        }
        o->lockstep = i == 1;
        break;
    }
    case OPT_ONLY: {
        size_t i = name_index(noisy_parts, SL_ARRAY_LEN(noisy_parts), arg);
        if (i == SL_ARRAY_LEN(noisy_parts)) {
            FAIL("--only is flood, quiet or both, not '%s'", arg);
        }
        o->only = (enum lt_noisy_part)i;
        break;
    }
    case OPT_BATCH:
        if (parse_u64(arg, 10, &u) != SL_OK || (u != 1 && u != 10)) {
            FAIL("--batch is 1 or 10");
        }
        o->batch = (unsigned)u;
        break;
    case OPT_SIZE:
        if (parse_u64(arg, UINT64_C(1024) * 1024, &u) != SL_OK || u < 32) {
            FAIL("--size wants 32..1048576 bytes");
        }
        o->message_size = (size_t)u;
        break;
    case OPT_TENANTS:
        if (parse_tenants(o, arg) != SL_OK) {
            FAIL("--tenants wants KEY:SECRET[,KEY:SECRET...]");
        }
        break;
    case OPT_QUEUES:
        if (parse_u64(arg, 1000, &u) != SL_OK || u == 0) {
            FAIL("--queues wants 1..1000");
        }
        o->queues = (unsigned)u;
        break;
    case OPT_QUEUE_PREFIX:
        replace(&o->queue_prefix, arg);
        break;
    case OPT_WAIT:
        if (parse_u64(arg, 20, &u) != SL_OK) {
            FAIL("--wait wants 0..20 seconds");
        }
        o->wait_s = (int)u;
        break;
    case OPT_PREFILL:
        if (parse_u64(arg, UINT64_MAX / 2, &o->prefill) != SL_OK) {
            FAIL("--prefill wants a number of messages");
        }
        break;
    case OPT_GAP_MS:
        if (parse_u64(arg, 10000, &u) != SL_OK) {
            FAIL("--gap-ms wants 0..10000");
        }
        o->gap_ms = (unsigned)u;
        break;
    case OPT_FIFO_GROUPS:
        if (parse_u64(arg, 1000000, &u) != SL_OK || u == 0) {
            FAIL("--fifo-groups wants 1..1000000");
        }
        o->fifo_groups = (uint32_t)u;
        break;
    case OPT_QUEUE_KIND:
        if (strcmp(arg, "standard") == 0) {
            o->queue_kind = LT_KIND_STANDARD;
        } else if (strcmp(arg, "priority") == 0) {
            o->queue_kind = LT_KIND_PRIORITY;
        } else if (strcmp(arg, "exclusive") == 0) {
            o->queue_kind = LT_KIND_EXCLUSIVE;
        } else {
            FAIL("--queue-kind wants standard, priority or exclusive");
        }
        break;
    case OPT_KEYS:
        if (parse_u64(arg, 1000000, &u) != SL_OK || u == 0) {
            FAIL("--keys wants 1..1000000");
        }
        o->exclusive_keys = u;
        break;
    case OPT_JSON:
        replace(&o->json_path, arg);
        break;
    case OPT_PLOT:
        replace(&o->plot_path, arg);
        break;
    case OPT_SERVER_PID:
        if (parse_u64(arg, INT32_MAX, &u) != SL_OK || u == 0) {
            FAIL("--server-pid wants a process id");
        }
        o->server_pid = (int)u;
        break;
    case 'q':
        o->quiet = true;
        break;
    case OPT_PRINT_SIGNED:
        o->print_signed_headers = true;
        break;
    case OPT_HTTP1:
        o->http1 = true;
        break;
    case OPT_HTTP_VERSION:
        if (strcmp(arg, "1.1") != 0 && strcmp(arg, "2") != 0) {
            FAIL("--http-version is 1.1 or 2");
        }
        o->http1 = strcmp(arg, "1.1") == 0;
        break;
    case OPT_PROTOCOL:
        if (strcmp(arg, "json") == 0) {
            o->protocol = LT_PROTO_JSON;
        } else if (strcmp(arg, "query") == 0) {
            o->protocol = LT_PROTO_QUERY;
        } else {
            FAIL("--protocol is json or query");
        }
        break;
    default:
        FAIL("unknown option (see --help)");
    }
    return SL_OK;
}

int lt_opts_parse(struct lt_opts *o, int argc, char **argv, char *err, size_t errlen)
{
    int c;
    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "c:m:d:n:qh", long_opts, NULL)) != -1) {
        if (c == 'h') {
            FAIL("help");
        }
        if (c == '?' || c == ':') {
            FAIL("unknown option or missing value: %s (see --help)", argv[optind - 1]);
        }
        int rc = apply(o, c, optarg, err, errlen);
        if (rc != SL_OK) {
            return rc;
        }
    }
    int npos = argc - optind;
    char **pos = argv + optind;
    if (o->tenant_count == 0) {
        parse_tenants(o, "default:default");
    }
    if (o->print_signed_headers) {
        if (npos != 2) {
            FAIL("--print-signed-headers wants ACTION JSON");
        }
        if (o->protocol != LT_PROTO_JSON) {
            FAIL("--print-signed-headers signs JSON 1.0 requests only");
        }
        replace(&o->raw_action, pos[0]);
        replace(&o->raw_json, pos[1]);
        return SL_OK;
    }
    if (npos < 1) {
        FAIL("no scenario given (see --help)");
    }
    size_t i;
    for (i = 0; i < SL_ARRAY_LEN(scenarios); i++) {
        if (strcmp(pos[0], scenarios[i].name) == 0) {
            break;
        }
    }
    if (i == SL_ARRAY_LEN(scenarios)) {
        FAIL("unknown scenario '%s'", pos[0]);
    }
    o->scenario = scenarios[i].sc;
    o->scenario_name = scenarios[i].name;
    if (o->scenario == LT_SC_RAW) {
        if (npos != 3) {
            FAIL("raw-action wants ACTION JSON");
        }
        replace(&o->raw_action, pos[1]);
        replace(&o->raw_json, pos[2]);
    } else if (npos != 1) {
        FAIL("unexpected argument '%s'", pos[1]);
    }
    if (o->duration_s <= 0 && o->count == 0) {
        FAIL("refusing to run unbounded: give --duration and/or --count");
    }
    if (!o->allow_remote && !is_loopback(o->host)) {
        FAIL("target %s is not loopback; pass --allow-remote if you mean it", o->host);
    }
    if (o->fifo_groups > 0 && (o->protocol != LT_PROTO_JSON ||
                               (o->scenario != LT_SC_SEND && o->scenario != LT_SC_RECEIVE_DELETE &&
                                o->scenario != LT_SC_ROUNDTRIP))) {
        FAIL("--fifo-groups is for send, receive-delete and roundtrip over --protocol json");
    }
    if (o->queue_kind != LT_KIND_STANDARD &&
        (o->protocol != LT_PROTO_JSON || o->fifo_groups > 0 ||
         (o->scenario != LT_SC_SEND && o->scenario != LT_SC_RECEIVE_DELETE &&
          o->scenario != LT_SC_ROUNDTRIP))) {
        FAIL("--queue-kind is for send, receive-delete and roundtrip over --protocol json, "
             "without --fifo-groups");
    }
    if ((o->receive_rate > 0 || o->flood_receive_rate > 0) && o->scenario != LT_SC_NOISY) {
        FAIL("--receive-rate and --flood-receive-rate are for the noisy scenario");
    }
    if (o->only != LT_NOISY_BOTH && o->scenario != LT_SC_NOISY) {
        FAIL("--only is for the noisy scenario");
    }
    if (o->scenario == LT_SC_NOISY) {
        if (o->rate <= 0) {
            FAIL("noisy needs --rate (the quiet tenants' rate)");
        }
        if (o->tenant_count < 2) {
            FAIL("noisy needs at least two --tenants (the first one floods)");
        }
        if (o->flood_rate <= 0) {
            o->flood_rate = 10 * o->rate;
        }
        if (o->receive_rate <= 0) {
            o->receive_rate = o->rate;
        }
        if (o->flood_receive_rate <= 0) {
            o->flood_receive_rate = o->receive_rate;
        }
    }
    if (o->consumer_streams == 0) {
        o->consumer_streams = o->streams;
    }
    if (o->wait_s < 0) {
        o->wait_s = o->scenario == LT_SC_ROUNDTRIP ? 1 : 0;
    }
    return SL_OK;
}

bool lt_opts_drives_tenant(const struct lt_opts *o, size_t i)
{
    switch (o->only) {
    case LT_NOISY_FLOOD:
        return i == 0;
    case LT_NOISY_QUIET:
        return i > 0;
    case LT_NOISY_BOTH:
        break;
    }
    return true;
}

const char *lt_noisy_part_name(enum lt_noisy_part part)
{
    return noisy_parts[part];
}
