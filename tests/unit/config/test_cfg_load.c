/*
 * test_cfg_load.c -- loading and validating configuration files: every good
 * file under tests/data/config/good loads with the values it spells (and
 * defaults where it spells none); every bad file under
 * tests/data/config/bad yields exactly the listed "FILE:LINE:COLUMN:
 * message" lines, all of them, in file order.
 *
 * The data directory comes from SLUICE_TEST_DATA (set by ctest).
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cfg.h"
#include "sl.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *data_path(const char *rel)
{
    const char *root = getenv("SLUICE_TEST_DATA");
    assert_non_null(root);
    root = root != NULL ? root : ""; /* the analyzer cannot tell the assert ends the test */
    size_t n = strlen(root) + strlen(rel) + 16;
    char *p = malloc(n);
    assert_non_null(p);
    snprintf(p, n, "%s/config/%s", root, rel);
    return p;
}

static struct cfg_snapshot *load_good(const char *rel)
{
    char *path = data_path(rel);
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    int rc = cfg_load_file(path, &s, &d);
    for (size_t i = 0; i < d.count; i++) {
        print_error("unexpected: %s\n", d.items[i].text);
    }
    assert_int_equal(rc, SL_OK);
    assert_int_equal(d.count, 0);
    assert_non_null(s);
    assert_string_equal(s->source, path);
    cfg_diags_free(&d);
    free(path);
    return s;
}

static const struct cfg_tenant *tenant(const struct cfg_snapshot *s, const char *name)
{
    const struct cfg_tenant *t = cfg_find_tenant(s, name, strlen(name));
    assert_non_null(t);
    return t;
}

/* ---- bad files ---------------------------------------------------------- */

/* Expected lines without the leading "PATH:"; "@DIR@" stands for the
 * directory of the bad files. */
struct bad_case {
    const char *file;
    const char *expected[12];
};

static const struct bad_case bad_cases[] = {
    {"action_limits.yaml",
     {"4:7: action \"SendMessageBatch\" is limited by the key SendMessage in "
      "defaults.limits.actions (a batch costs one token per entry)",
      "11:9: unknown action \"receivemessage\" in tenants.acme.limits.actions; action names are "
      "case-sensitive: ReceiveMessage",
      "12:9: unknown action \"CreateQueue\" in tenants.acme.limits.actions (allowed: "
      "SendMessage, ReceiveMessage, DeleteMessage, ChangeMessageVisibility, "
      "StartMessageMoveTask, ListMessageMoveTasks, CancelMessageMoveTask)",
      "13:47: requests_per_second must be a number, not \"fast\"",
      "15:9: duplicate key \"DeleteMessage\" (first defined on line 14)",
      "16:15: queues must be a mapping, not a list"}},
    {"admin_incomplete.yaml",
     {"1:1: missing access_key_id in admin", "1:1: missing secret_access_key in admin",
      "2:11: admin.listen must differ from listen (127.0.0.1:9324 by default)"}},
    {"alias.yaml", {"8:13: yaml aliases are not supported"}},
    {"cluster_addresses.yaml",
     {"6:3: replication (3 by default) must not exceed the number of nodes in cluster.nodes (2)",
      "8:21: raft address \"127.0.0.1:7101\" is already used by the peer of the entry on line 7",
      "8:64: api address \"127.0.0.1:9324\" is already used by the api of the entry on line 7"}},
    {"cluster_duplicate_id.yaml", {"9:12: node id 2 is already used by the entry on line 8"}},
    {"cluster_missing.yaml",
     {"1:1: missing node_id in cluster", "1:1: missing raft in cluster",
      "1:1: missing peer in cluster", "1:1: missing secret_file in cluster",
      "2:16: replication (1) must not exceed the number of nodes in cluster.nodes (0)"}},
    {"cluster_not_listed.yaml",
     {"2:12: node_id 4 is not in cluster.nodes, which must list every node, this one included",
      "3:16: replication (5) must not exceed the number of nodes in cluster.nodes (3)"}},
    {"cluster_secret.yaml",
     {"5:16: secret_file \"@DIR@/cluster_short.secret\" holds 31 bytes; the cluster secret "
      "needs at least 32",
      "6:10: nodes must be a list of {id, raft, peer, api}, not a mapping"}},
    {"cluster_self.yaml",
     {"8:21: node 2 is this node (node_id), but its raft \"127.0.0.1:7009\" differs from "
      "cluster.raft \"127.0.0.1:7002\" (line 3)",
      "8:43: node 2 is this node (node_id), but its peer \"127.0.0.1:7109\" differs from "
      "cluster.peer \"127.0.0.1:7102\" (line 4)"}},
    {"cluster_values.yaml",
     {"2:12: node_id must be between 1 and 65535, not \"0\"",
      "3:9: raft must be an address other machines can reach, not the wildcard \"0.0.0.0:7001\"",
      "4:9: peer must be host:port, not \"localhost\"", "6:16: replication must be odd, not 2",
      "7:18: memory_budget must be 0 (derived) or at least 67108864, not \"1000\"",
      "8:21: snapshot_entries must be between 64 and 16777216, not \"10\"",
      /* A diagnostic too long for one line, split on purpose. */
      /* NOLINTNEXTLINE(bugprone-suspicious-missing-comma) */
      "9:3: unknown key \"secret\" in cluster (allowed: node_id, raft, peer, secret_file, "
      "replication, nodes, memory_budget, snapshot_entries)",
      "11:12: id must be between 1 and 65535, not \"70000\"",
      "11:47: peer must be an address other machines can reach, not the wildcard \"[::]:7101\"",
      "12:7: an entry of cluster.nodes must be a mapping {id, raft, peer, api}, not "
      "\"just-a-string\"",
      "13:7: missing api in this entry of cluster.nodes",
      "13:59: unknown key \"port\" in an entry of cluster.nodes (allowed: id, raft, peer, api)"}},
    {"auto_create.yaml",
     {"2:23: auto_create_queues must be true or false, not \"sometimes\"",
      "7:25: auto_create_queues must be true or false, not a list"}},
    {"comment_only.yaml", {"1:1: the configuration is empty"}},
    {"queue_defaults.yaml",
     {"4:24: VisibilityTimeout must be between 0 and 43200, not \"50000\"",
      "5:5: unknown key \"Colour\" in defaults.queue_defaults (allowed: VisibilityTimeout, "
      "DelaySeconds, MessageRetentionPeriod, MaximumMessageSize, ReceiveMessageWaitTimeSeconds)",
      "11:31: MessageRetentionPeriod must be between 60 and 1209600, not \"30\"",
      "12:21: DelaySeconds must be an integer, not the quoted string \"5\""}},
    {"duplicate_access_key.yaml",
     {"6:20: access key id \"SHARED\" is already used by admin (line 2)",
      "12:20: access key id \"AKIDZ\" is already used by tenant \"zeta\" (line 9)"}},
    {"duplicate_key.yaml",
     {"3:1: duplicate key \"partitions\" (first defined on line 1)",
      "8:3: duplicate key \"acme\" (first defined on line 5)"}},
    {"durability.yaml", {"1:13: durability must be fsync or os, not \"sometimes\""}},
    {"empty.yaml", {"1:1: the configuration is empty"}},
    {"env_unset.yaml",
     {"4:24: environment variable SLUICE_TEST_SURELY_UNSET for secret_access_key is unset or "
      "empty",
      "7:24: environment variable SLUICE_TEST_EMPTY for secret_access_key is unset or empty",
      "10:24: invalid environment variable name in secret_access_key \"env:9bad\""}},
    {"listen.yaml",
     {"1:9: listen must be host:port, not \"localhost\"",
      "3:11: an ipv6 address in listen must be in brackets, as [::1]:9324"}},
    {"misplaced_key.yaml",
     {"1:1: key \"burst\" is not allowed at the top level; it belongs in limits",
      "6:5: key \"delay_seconds\" is not allowed in tenant \"acme\"; it belongs in spill"}},
    {"not_mapping.yaml", {"1:1: the configuration must be a mapping, not a list"}},
    {"on_excess.yaml", {"2:14: on_excess must be reject or spill, not \"drop\""}},
    {"out_of_range.yaml",
     {"1:13: partitions must be between 1 and 1024, not \"2000\"",
      "2:13: io_threads must be between 0 and 256, not \"1000\"",
      "5:26: requests_per_second must be above 0 and at most 1000000, not \"0\"",
      "6:12: burst must be between 1 and 100000000, not \"0\"",
      "7:19: max_inflight must be between 1 and 120000000, not \"999999999999\"",
      "8:18: max_backlog must be between 1 and 1000000000000, not \"0\"",
      "9:21: max_long_polls must be between 1 and 1000000, not \"0\"",
      "10:30: max_concurrent_requests must be between 1 and 1000000, not \"0\"",
      "12:20: delay_seconds must be between 0 and 900, not \"901\""}},
    {"port.yaml",
     {"1:9: port in listen must be between 1 and 65535, not \"70000\"",
      "3:11: port in listen must be between 1 and 65535, not \"0\""}},
    {"several.yaml",
     {"1:9: listen must be host:port, not \"127.0.0.1\"",
      "2:13: partitions must be between 1 and 1024, not \"0\"",
      "3:13: durability must be fsync or os, not \"fast\"",
      "8:16: on_excess must be reject or spill, not \"queue\"",
      "9:3: invalid tenant name \"no/slash\": use 1 to 64 of A-Z a-z 0-9 _ -",
      "10:20: access key id \"AKIDACME\" is already used by tenant \"acme\" (line 6)"}},
    {"queue_limits.yaml",
     {"7:9: invalid queue name \"bad name\" in tenants.acme.limits.queues: use 1 to 80 of A-Z "
      "a-z 0-9 _ -, optionally ending in .fifo",
      "8:9: missing burst in tenants.acme.limits.queues.no-burst",
      "9:9: missing requests_per_second in tenants.acme.limits.queues.no-rate",
      "10:56: key \"max_inflight\" is not allowed in tenants.acme.limits.queues.extra.fifo; it "
      "belongs in limits",
      "12:9: duplicate key \"orders\" (first defined on line 11)",
      "13:37: requests_per_second must be above 0 and at most 1000000, not \"0\"",
      "13:47: burst must be between 1 and 100000000, not \"0\"",
      "14:17: tenants.acme.limits.queues.scalar must be a mapping, not \"5\"",
      "15:5: key \"queues\" is not allowed in tenant \"acme\"; it belongs in limits"}},
    {"shard_size.yaml", {"2:13: shard_size must not exceed partitions (4), not 5"}},
    {"spill_range.yaml", {"3:25: aged_after_seconds must be between 1 and 1209600, not \"0\""}},
    {"syntax.yaml", {"5:4: yaml syntax error: did not find expected key"}},
    {"tenant_incomplete.yaml",
     {"2:3: missing access_key_id in tenant \"acme\"",
      "2:3: missing secret_access_key in tenant \"acme\"",
      "5:9: tenant \"beta\" must be a mapping, not \"just-a-string\""}},
    {"tenant_name.yaml",
     {"2:3: invalid tenant name \"bad name\": use 1 to 64 of A-Z a-z 0-9 _ -",
      "5:3: invalid tenant name "
      "\"this-name-is-far-too-long-for-a-tenant-because-it-has-more-than-...\": use 1 to 64 "
      "of A-Z a-z 0-9 _ -"}},
    {"server_limits.yaml",
     {"2:20: max_connections must be between 0 and 1000000, not \"2000000\"",
      "3:29: max_connections_per_peer must be between 0 and 1000000, not \"-1\"",
      "4:3: unknown key \"max_conns\" in server (allowed: max_connections, "
      "max_connections_per_peer, min_free_disk_bytes, request_body_budget_bytes, "
      "response_budget_bytes)",
      "5:30: request_body_budget_bytes must be 0 (derived) or at least 4194304, not \"1000\""}},
    {"tls_incomplete.yaml", {"1:1: missing key_file in tls"}},
    {"tls_missing_file.yaml",
     {"2:14: cannot read cert_file \"@DIR@/no-such.crt\" (no such file or directory)",
      "3:13: cannot read key_file \"/nonexistent/server.key\" (no such file or directory)"}},
    {"two_documents.yaml", {"2:1: only one yaml document is allowed"}},
    {"unknown_key.yaml",
     {"2:1: unknown key \"colour\" at the top level (allowed: listen, tls, region, data_dir, "
      "partitions, shard_size, durability, io_threads, log_requests, server, admin, defaults, "
      "tenants, cluster)"}},
    {"wrong_type.yaml",
     {"1:13: partitions must be an integer, not the quoted string \"x\"",
      "2:13: io_threads must be an integer, not \"many\"",
      "3:15: log_requests must be true or false, not \"maybe\"",
      "9:28: requests_per_second must be a number, not \"fast\""}},
};

/* "PATH:" + suffix, with @DIR@ replaced by the bad files' directory. */
static char *expected_text(const char *path, const char *dir, const char *suffix)
{
    size_t n = strlen(path) + strlen(dir) + strlen(suffix) + 4;
    char *out = malloc(n);
    assert_non_null(out);
    const char *at = strstr(suffix, "@DIR@");
    if (at == NULL) {
        snprintf(out, n, "%s:%s", path, suffix);
    } else {
        snprintf(out, n, "%s:%.*s%s%s", path, (int)(at - suffix), suffix, dir, at + 5);
    }
    return out;
}

static void check_bad_case(const struct bad_case *c)
{
    char rel[128];
    snprintf(rel, sizeof(rel), "bad/%s", c->file);
    char *path = data_path(rel);
    char *dir = data_path("bad");
    struct cfg_snapshot *sentinel = (struct cfg_snapshot *)&sentinel;
    struct cfg_snapshot *s = sentinel;
    struct cfg_diags d;
    int rc = cfg_load_file(path, &s, &d);
    assert_int_equal(rc, SL_EINVAL);
    assert_ptr_equal(s, sentinel); /* untouched on failure */
    size_t want = 0;
    while (want < sizeof(c->expected) / sizeof(c->expected[0]) && c->expected[want] != NULL) {
        want++;
    }
    for (size_t i = 0; i < d.count || i < want; i++) {
        const char *got = i < d.count ? d.items[i].text : "(nothing)";
        char *exp = i < want ? expected_text(path, dir, c->expected[i]) : strdup("(nothing)");
        if (strcmp(got, exp) != 0) {
            print_error("%s: diag %zu\n  got:  %s\n  want: %s\n", c->file, i, got, exp);
        }
        assert_string_equal(got, exp);
        free(exp);
    }
    assert_int_equal(d.count, want);
    for (size_t i = 0; i < d.count; i++) {
        assert_true(d.items[i].line >= 1 && d.items[i].column >= 1);
    }
    cfg_diags_free(&d);
    assert_int_equal(d.count, 0);
    free(dir);
    free(path);
}

static void test_bad_files(void **state)
{
    (void)state;
    setenv("SLUICE_TEST_EMPTY", "", 1);
    unsetenv("SLUICE_TEST_SURELY_UNSET");
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        check_bad_case(&bad_cases[i]);
    }
}

/* A bad file without expectations would test nothing: every file in the
 * directory must have its row above. */
static void test_every_bad_file_has_expectations(void **state)
{
    (void)state;
    char *dir = data_path("bad");
    DIR *dh = opendir(dir);
    assert_non_null(dh);
    size_t seen = 0;
    struct dirent *e;
    while ((e = readdir(dh)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".yaml") != 0) {
            continue;
        }
        bool found = false;
        for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
            found = found || strcmp(bad_cases[i].file, e->d_name) == 0;
        }
        if (!found) {
            print_error("no expectations for bad/%s\n", e->d_name);
        }
        assert_true(found);
        seen++;
    }
    closedir(dh);
    assert_int_equal(seen, sizeof(bad_cases) / sizeof(bad_cases[0]));
    free(dir);
}

/* ---- good files --------------------------------------------------------- */

static void assert_builtin_tenant_defaults(const struct cfg_tenant *t)
{
    assert_true(t->limits.requests_per_second == 1000.0);
    assert_int_equal(t->limits.burst, 2000);
    assert_int_equal(t->limits.max_inflight, 120000);
    assert_int_equal(t->limits.max_backlog, 1000000);
    assert_int_equal(t->limits.max_long_polls, 1000);
    assert_int_equal(t->limits.max_concurrent_requests, 2000);
    assert_int_equal(t->on_excess, CFG_EXCESS_REJECT);
    assert_int_equal(t->spill.delay_seconds, 30);
    assert_int_equal(t->spill.aged_after_seconds, 300);
    assert_false(t->auto_create_queues);
}

static void test_contract_example(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/contract.yaml");
    assert_string_equal(s->listen.host, "127.0.0.1");
    assert_int_equal(s->listen.port, 9324);
    assert_false(s->tls.enabled);
    assert_string_equal(s->region, "us-east-1");
    assert_string_equal(s->data_dir, "./sluice-data");
    assert_int_equal(s->partitions, 16);
    assert_int_equal(s->shard_size, 2);
    assert_int_equal(s->durability, CFG_DURABILITY_FSYNC);
    assert_true(s->admin.enabled);
    assert_string_equal(s->admin.listen.host, "127.0.0.1");
    assert_int_equal(s->admin.listen.port, 9325);
    assert_string_equal(s->admin.access_key_id, "admin");
    assert_string_equal(s->admin.secret_access_key, "admin-secret");
    assert_null(s->admin.bearer_token);
    assert_int_equal(s->tenant_count, 1);
    const struct cfg_tenant *t = tenant(s, "acme");
    assert_string_equal(t->access_key_id, "AKIDACME");
    assert_string_equal(t->secret_access_key, "acme-secret");
    assert_true(t->limits.requests_per_second == 200.0);
    assert_int_equal(t->limits.burst, 400);
    assert_int_equal(t->limits.max_inflight, 120000);
    assert_int_equal(t->on_excess, CFG_EXCESS_SPILL);
    assert_int_equal(t->spill.delay_seconds, 30);
    assert_int_equal(t->spill.aged_after_seconds, 300);
    assert_int_equal(s->_refs, 1);
    cfg_snapshot_unref(s);
}

static void test_builtin_defaults(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/minimal.yaml");
    assert_string_equal(s->listen.host, "127.0.0.1");
    assert_int_equal(s->listen.port, 9324);
    assert_false(s->tls.enabled);
    assert_false(s->admin.enabled);
    assert_string_equal(s->region, "us-east-1");
    assert_string_equal(s->data_dir, "./sluice-data");
    assert_int_equal(s->partitions, 16);
    assert_int_equal(s->shard_size, 2);
    assert_int_equal(s->durability, CFG_DURABILITY_FSYNC);
    assert_true(s->log_requests);
    assert_true(s->io_threads >= 1); /* resolved from the CPU count */
    assert_int_equal(s->tenant_count, 1);
    assert_builtin_tenant_defaults(tenant(s, "solo"));
    cfg_snapshot_unref(s);
}

static void test_defaults_apply_per_key(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/defaults.yaml");
    assert_int_equal(s->tenant_count, 2);
    assert_string_equal(s->tenants[0].name, "partial"); /* sorted by name */
    assert_string_equal(s->tenants[1].name, "plain");
    assert_true(s->default_limits.requests_per_second == 12.5);
    assert_int_equal(s->default_on_excess, CFG_EXCESS_SPILL);
    assert_int_equal(s->default_spill.delay_seconds, 60);
    assert_true(s->default_auto_create_queues);

    const struct cfg_tenant *plain = tenant(s, "plain");
    assert_true(plain->limits.requests_per_second == 12.5);
    assert_int_equal(plain->limits.burst, 25);
    assert_int_equal(plain->limits.max_inflight, 500);
    assert_int_equal(plain->limits.max_backlog, 7000);
    assert_int_equal(plain->limits.max_long_polls, 9);
    assert_int_equal(plain->limits.max_concurrent_requests, 33);
    assert_int_equal(plain->on_excess, CFG_EXCESS_SPILL);
    assert_int_equal(plain->spill.delay_seconds, 60);
    assert_int_equal(plain->spill.aged_after_seconds, 600);
    assert_true(plain->auto_create_queues); /* inherited */
    assert_true(plain->queue_defaults.set[CFG_QD_VISIBILITY_TIMEOUT]);
    assert_int_equal(plain->queue_defaults.value[CFG_QD_VISIBILITY_TIMEOUT], 60);
    assert_int_equal(plain->queue_defaults.value[CFG_QD_DELAY_SECONDS], 2);
    assert_false(plain->queue_defaults.set[CFG_QD_MAXIMUM_MESSAGE_SIZE]);

    const struct cfg_tenant *partial = tenant(s, "partial");
    assert_true(partial->limits.requests_per_second == 12.5); /* inherited */
    assert_int_equal(partial->limits.burst, 50);              /* its own */
    assert_int_equal(partial->limits.max_inflight, 500);
    assert_int_equal(partial->spill.delay_seconds, 5);        /* its own */
    assert_int_equal(partial->spill.aged_after_seconds, 600); /* inherited */
    assert_int_equal(partial->on_excess, CFG_EXCESS_SPILL);
    assert_false(partial->auto_create_queues);                                /* its own */
    assert_int_equal(partial->queue_defaults.value[CFG_QD_DELAY_SECONDS], 5); /* its own */
    assert_int_equal(partial->queue_defaults.value[CFG_QD_VISIBILITY_TIMEOUT], 60);
    cfg_snapshot_unref(s);
}

static void assert_rate(const struct cfg_rate *r, double rps, uint32_t burst)
{
    assert_non_null(r);
    assert_true(r->requests_per_second == rps);
    assert_int_equal(r->burst, burst);
}

static void assert_no_rate(const struct cfg_rate *r)
{
    assert_true(r->requests_per_second == 0);
    assert_int_equal(r->burst, 0);
}

static void test_keyed_limits(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/keyed_limits.yaml");
    const struct cfg_limits *d = &s->default_limits;
    assert_rate(&d->actions[CFG_ACTION_RECEIVE_MESSAGE], 100, 200);
    assert_rate(&d->actions[CFG_ACTION_DELETE_MESSAGE], 50, 50);
    assert_no_rate(&d->actions[CFG_ACTION_SEND_MESSAGE]);
    assert_int_equal(d->queue_rate_count, 1);
    assert_string_equal(d->queue_rates[0].queue, "shared");
    assert_rate(&d->queue_rates[0].rate, 5, 10);

    /* A tenant that says nothing inherits every keyed limit. */
    const struct cfg_tenant *plain = tenant(s, "plain");
    assert_true(cfg_limits_equal(&plain->limits, d));
    assert_ptr_not_equal(plain->limits.queue_rates, d->queue_rates); /* its own copy */
    assert_rate(cfg_find_queue_rate(&plain->limits, "shared", 6), 5, 10);

    const struct cfg_limits *acme = &tenant(s, "acme")->limits;
    assert_false(cfg_limits_equal(acme, d));
    /* Queues: its own, merged with the defaults' per queue, sorted by name. */
    assert_int_equal(acme->queue_rate_count, 3);
    assert_string_equal(acme->queue_rates[0].queue, "audit.fifo");
    assert_string_equal(acme->queue_rates[1].queue, "orders");
    assert_string_equal(acme->queue_rates[2].queue, "shared");
    assert_rate(cfg_find_queue_rate(acme, "orders", 6), 50, 100);
    assert_rate(cfg_find_queue_rate(acme, "audit.fifo", 10), 0.5, 1);
    assert_rate(cfg_find_queue_rate(acme, "shared", 6), 5, 20); /* burst its own */
    assert_null(cfg_find_queue_rate(acme, "order", 5));
    assert_null(cfg_find_queue_rate(acme, "orders-and-more", 7));
    assert_rate(cfg_find_queue_rate(acme, "orders-and-more", 6), 50, 100); /* length ends it */
    /* Actions: per action, and per key inside one. */
    assert_rate(&acme->actions[CFG_ACTION_SEND_MESSAGE], 20, 40);
    assert_rate(&acme->actions[CFG_ACTION_RECEIVE_MESSAGE], 10, 200);
    assert_rate(&acme->actions[CFG_ACTION_DELETE_MESSAGE], 50, 50);
    assert_no_rate(&acme->actions[CFG_ACTION_CHANGE_MESSAGE_VISIBILITY]);
    /* The tenant-wide keys beside them are untouched. */
    assert_true(acme->requests_per_second == 200);
    assert_int_equal(acme->burst, 400);
    cfg_snapshot_unref(s);
}

static void test_action_keys(void **state)
{
    (void)state;
    static const struct {
        const char *action;
        int key; /* -1: not counted, so no key limits it */
    } cases[] = {
        {"SendMessage", CFG_ACTION_SEND_MESSAGE},
        {"SendMessageBatch", CFG_ACTION_SEND_MESSAGE},
        {"ReceiveMessage", CFG_ACTION_RECEIVE_MESSAGE},
        {"DeleteMessage", CFG_ACTION_DELETE_MESSAGE},
        {"DeleteMessageBatch", CFG_ACTION_DELETE_MESSAGE},
        {"ChangeMessageVisibility", CFG_ACTION_CHANGE_MESSAGE_VISIBILITY},
        {"ChangeMessageVisibilityBatch", CFG_ACTION_CHANGE_MESSAGE_VISIBILITY},
        {"StartMessageMoveTask", CFG_ACTION_START_MESSAGE_MOVE_TASK},
        {"ListMessageMoveTasks", CFG_ACTION_LIST_MESSAGE_MOVE_TASKS},
        {"CancelMessageMoveTask", CFG_ACTION_CANCEL_MESSAGE_MOVE_TASK},
        {"ReceiveMessageBatch", -1},
        {"CreateQueue", -1},
        {"Batch", -1},
        {"sendmessage", -1},
        {"", -1},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        enum cfg_action_key key = CFG_ACTION_KEY_COUNT;
        bool found = cfg_action_key_of(cases[i].action, strlen(cases[i].action), &key);
        assert_int_equal(found, cases[i].key >= 0);
        if (found) {
            assert_int_equal(key, cases[i].key);
        }
    }
    for (int k = 0; k < CFG_ACTION_KEY_COUNT; k++) {
        const char *name = cfg_action_key_name((enum cfg_action_key)k);
        enum cfg_action_key back;
        assert_true(cfg_action_key_of(name, strlen(name), &back));
        assert_int_equal(back, k);
    }
    assert_null(cfg_action_key_name(CFG_ACTION_KEY_COUNT));
}

static void test_env_secrets(void **state)
{
    (void)state;
    setenv("SLUICE_TEST_ADMIN_SECRET", "admin-from-env", 1);
    setenv("SLUICE_TEST_BEARER", "bearer-from-env", 1);
    setenv("SLUICE_TEST_ACME_SECRET", "acme-from-env", 1);
    struct cfg_snapshot *s = load_good("good/env_secrets.yaml");
    assert_string_equal(s->admin.secret_access_key, "admin-from-env");
    assert_string_equal(s->admin.bearer_token, "bearer-from-env");
    assert_string_equal(tenant(s, "acme")->secret_access_key, "acme-from-env");
    assert_string_equal(tenant(s, "literal")->secret_access_key, "env-not-a-reference");
    /* Read at load time: a later change of the environment does not leak in. */
    setenv("SLUICE_TEST_ACME_SECRET", "changed", 1);
    assert_string_equal(tenant(s, "acme")->secret_access_key, "acme-from-env");
    cfg_snapshot_unref(s);
    unsetenv("SLUICE_TEST_ADMIN_SECRET");
    unsetenv("SLUICE_TEST_BEARER");
    unsetenv("SLUICE_TEST_ACME_SECRET");
}

static void test_extra_keys(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/extras.yaml");
    assert_string_equal(s->listen.host, "::1");
    assert_int_equal(s->listen.port, 9400);
    assert_int_equal(s->io_threads, 3);
    assert_false(s->log_requests);
    assert_int_equal(s->durability, CFG_DURABILITY_OS);
    assert_int_equal(s->partitions, 1);
    assert_int_equal(s->shard_size, 1); /* the default 2, capped at partitions */
    assert_string_equal(s->region, "eu-west-3");
    assert_true(s->admin.enabled);
    assert_int_equal(s->admin.listen.port, 9325);
    assert_string_equal(s->admin.bearer_token, "s3cr3t-Token_value~+/=");
    const struct cfg_tenant *t = tenant(s, "t1");
    assert_int_equal(t->limits.max_backlog, 5000000000ull);
    assert_int_equal(t->limits.max_long_polls, 20);
    cfg_snapshot_unref(s);
}

static void test_tls_paths_resolve_against_the_file(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/tls.yaml");
    char *cert = data_path("good/tls/server.crt");
    char *key = data_path("good/tls/server.key");
    assert_true(s->tls.enabled);
    assert_string_equal(s->tls.cert_file, cert);
    assert_string_equal(s->tls.key_file, key);
    free(cert);
    free(key);
    cfg_snapshot_unref(s);
}

static void test_embedded_default(void **state)
{
    (void)state;
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    assert_int_equal(cfg_load_default(&s, &d), SL_OK);
    assert_int_equal(d.count, 0);
    assert_string_equal(s->source, "<embedded default>");
    assert_string_equal(s->listen.host, "127.0.0.1");
    assert_int_equal(s->listen.port, 9324);
    assert_string_equal(s->data_dir, "./sluice-data");
    assert_int_equal(s->tenant_count, 1);
    const struct cfg_tenant *t = tenant(s, "default");
    assert_string_equal(t->access_key_id, "default");
    assert_string_equal(t->secret_access_key, "default");
    assert_builtin_tenant_defaults(t);
    cfg_snapshot_unref(s);

    /* The same text through the public string loader. */
    const char *yaml = cfg_default_yaml();
    assert_int_equal(cfg_load_string("x", yaml, strlen(yaml), &s, &d), SL_OK);
    cfg_snapshot_unref(s);
    cfg_diags_free(&d);
}

/* ---- in-memory texts ------------------------------------------------------ */

/* Loads text that must fail with exactly the one diag want. */
static void expect_one(const char *text, size_t len, const char *want)
{
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    assert_int_equal(cfg_load_string("mem.yaml", text, len, &s, &d), SL_EINVAL);
    assert_null(s);
    for (size_t i = 0; d.count != 1 && i < d.count; i++) {
        print_error("diag: %s\n", d.items[i].text);
    }
    assert_int_equal(d.count, 1);
    assert_string_equal(d.items[0].text, want);
    cfg_diags_free(&d);
}

static void test_yaml_level_problems(void **state)
{
    (void)state;
    const char *key = "? [a, b]\n: 1\n";
    expect_one(key, strlen(key),
               "mem.yaml:1:3: mapping keys must be strings, not a mapping or a list");

    const char ctrl[] = "partitions: 4\nregion: \x01\n";
    expect_one(ctrl, sizeof(ctrl) - 1,
               "mem.yaml:2:9: yaml syntax error: control characters are not allowed");

    char deep[200];
    size_t n = (size_t)snprintf(deep, sizeof(deep), "a: ");
    for (int i = 0; i < 40; i++) {
        deep[n++] = '[';
    }
    for (int i = 0; i < 40; i++) {
        deep[n++] = ']';
    }
    deep[n] = '\0';
    expect_one(deep, n, "mem.yaml:1:35: nesting is deeper than 32 levels");

    size_t big_len = 1024 * 1024 + 1;
    char *big = malloc(big_len);
    assert_non_null(big);
    memset(big, ' ', big_len);
    expect_one(big, big_len, "mem.yaml: the configuration is larger than 1048576 bytes");
    free(big);

    const char *q = "partitions: \"16\"\n";
    expect_one(q, strlen(q),
               "mem.yaml:1:13: partitions must be an integer, not the quoted string \"16\"");
    const char *nul = "region:\n";
    expect_one(nul, strlen(nul), "mem.yaml:1:8: region must be a string, not empty");
}

/* ---- cluster ------------------------------------------------------------- */

static void assert_endpoint(const struct cfg_endpoint *e, const char *host, uint16_t port)
{
    assert_string_equal(e->host, host);
    assert_int_equal(e->port, port);
}

static void test_cluster(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load_good("good/cluster.yaml");
    const struct cfg_cluster *c = &s->cluster;
    assert_true(c->enabled);
    assert_int_equal(c->node_id, 2);
    assert_endpoint(&c->raft, "127.0.0.1", 7002);
    assert_endpoint(&c->peer, "127.0.0.1", 7102);
    assert_int_equal(c->replication, 3);
    assert_int_equal(c->memory_budget, 1073741824ull);
    assert_int_equal(c->snapshot_entries, 8192);

    /* The secret is the file's bytes, newline included, read at load. */
    char *secret = data_path("good/cluster.secret");
    assert_string_equal(c->secret_file, secret);
    FILE *f = fopen(secret, "rb");
    assert_non_null(f);
    unsigned char want[128];
    size_t n = fread(want, 1, sizeof(want), f);
    fclose(f);
    assert_int_equal(n, 44);
    assert_int_equal(c->secret_len, n);
    assert_memory_equal(c->secret, want, n);
    free(secret);

    /* Sorted by id, whatever the file's order and style of entry. */
    assert_int_equal(c->node_count, 3);
    assert_int_equal(c->nodes[0].id, 1);
    assert_endpoint(&c->nodes[0].raft, "127.0.0.1", 7001);
    assert_endpoint(&c->nodes[0].peer, "127.0.0.1", 7101);
    assert_endpoint(&c->nodes[0].api, "127.0.0.1", 9324);
    assert_int_equal(c->nodes[1].id, 2);
    assert_endpoint(&c->nodes[1].api, "::1", 9334);
    assert_int_equal(c->nodes[2].id, 3);
    assert_endpoint(&c->nodes[2].peer, "127.0.0.1", 7103);
    cfg_snapshot_unref(s);

    /* Without the section: one node, nothing of a cluster. */
    s = load_good("good/minimal.yaml");
    assert_false(s->cluster.enabled);
    assert_int_equal(s->cluster.node_count, 0);
    assert_null(s->cluster.secret);
    cfg_snapshot_unref(s);
}

/* A cluster section with the secret at secret (absolute) and extra keys
 * after node_id; one node, replication 1. */
static int cluster_yaml(char *buf, size_t cap, const char *secret, const char *extra)
{
    return snprintf(buf, cap,
                    "cluster:\n"
                    "  node_id: 7\n"
                    "%s"
                    "  raft: 127.0.0.1:7007\n"
                    "  peer: 127.0.0.1:7107\n"
                    "  secret_file: %s\n"
                    "  nodes:\n"
                    "    - {id: 7, raft: 127.0.0.1:7007, peer: 127.0.0.1:7107, api: "
                    "127.0.0.1:9324}\n",
                    extra, secret);
}

static void test_cluster_defaults_and_secrets(void **state)
{
    (void)state;
    char *secret = data_path("good/cluster.secret");
    char yaml[1024];
    int n = cluster_yaml(yaml, sizeof(yaml), secret, "  replication: 1\n");
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    assert_int_equal(cfg_load_string("mem.yaml", yaml, (size_t)n, &s, &d), SL_OK);
    assert_int_equal(s->cluster.replication, 1);
    assert_int_equal(s->cluster.snapshot_entries, 4096);
    assert_int_equal(s->cluster.memory_budget, 0);
    cfg_snapshot_unref(s);
    cfg_diags_free(&d);

    /* The default replication is 3: one node is too few for it. */
    n = cluster_yaml(yaml, sizeof(yaml), secret, "");
    expect_one(yaml, (size_t)n,
               "mem.yaml:6:3: replication (3 by default) must not exceed the number of nodes in "
               "cluster.nodes (1)");
    free(secret);

    n = cluster_yaml(yaml, sizeof(yaml), "/nonexistent/cluster.secret", "  replication: 1\n");
    expect_one(yaml, (size_t)n,
               "mem.yaml:6:16: cannot read secret_file \"/nonexistent/cluster.secret\" (no such "
               "file or directory)");

    char long_path[] = "/tmp/sluice-test-secret-XXXXXX";
    int fd = mkstemp(long_path);
    assert_true(fd >= 0);
    char big[4097];
    memset(big, 'x', sizeof(big));
    assert_int_equal(write(fd, big, sizeof(big)), (ssize_t)sizeof(big));
    close(fd);
    n = cluster_yaml(yaml, sizeof(yaml), long_path, "  replication: 1\n");
    char want[256];
    snprintf(want, sizeof(want), "mem.yaml:6:16: secret_file \"%s\" is longer than 4096 bytes",
             long_path);
    expect_one(yaml, (size_t)n, want);
    /* Exactly at the bound is fine. */
    fd = open(long_path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, big, 4096), 4096);
    close(fd);
    assert_int_equal(cfg_load_string("mem.yaml", yaml, (size_t)n, &s, &d), SL_OK);
    assert_int_equal(s->cluster.secret_len, 4096);
    cfg_snapshot_unref(s);
    cfg_diags_free(&d);
    unlink(long_path);

    const char *scalar = "cluster: 5\n";
    expect_one(scalar, strlen(scalar), "mem.yaml:1:10: cluster must be a mapping, not \"5\"");
    const char *misplaced = "replication: 3\n";
    expect_one(misplaced, strlen(misplaced),
               "mem.yaml:1:1: key \"replication\" is not allowed at the top level; it belongs in "
               "cluster");
}

static void test_missing_file(void **state)
{
    (void)state;
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    assert_int_equal(cfg_load_file("/nonexistent/sluice.yaml", &s, &d), SL_ENOTFOUND);
    assert_null(s);
    assert_int_equal(d.count, 1);
    assert_string_equal(d.items[0].text,
                        "/nonexistent/sluice.yaml: cannot open the configuration (no such file "
                        "or directory)");
    assert_int_equal(d.items[0].line, 0);
    cfg_diags_free(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bad_files),
        cmocka_unit_test(test_every_bad_file_has_expectations),
        cmocka_unit_test(test_contract_example),
        cmocka_unit_test(test_builtin_defaults),
        cmocka_unit_test(test_defaults_apply_per_key),
        cmocka_unit_test(test_keyed_limits),
        cmocka_unit_test(test_action_keys),
        cmocka_unit_test(test_env_secrets),
        cmocka_unit_test(test_extra_keys),
        cmocka_unit_test(test_tls_paths_resolve_against_the_file),
        cmocka_unit_test(test_embedded_default),
        cmocka_unit_test(test_yaml_level_problems),
        cmocka_unit_test(test_missing_file),
        cmocka_unit_test(test_cluster),
        cmocka_unit_test(test_cluster_defaults_and_secrets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
