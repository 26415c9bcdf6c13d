/*
 * test_cfg_snapshot.c -- what other modules ask a loaded snapshot: access
 * key -> principal, tenant by name, tenant name syntax; the holder's
 * reference discipline across a swap (also with reader threads running);
 * and the keys a reload cannot move, the cluster section's among them.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "cfg.h"
#include "sl.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char base_yaml[] = "admin:\n"
                                "  access_key_id: ADMINKEY\n"
                                "  secret_access_key: admin-secret\n"
                                "tenants:\n"
                                "  zulu:\n"
                                "    access_key_id: AKIDZULU\n"
                                "    secret_access_key: zulu-secret\n"
                                "  acme:\n"
                                "    access_key_id: AKIDACME\n"
                                "    secret_access_key: acme-secret\n"
                                "  mid:\n"
                                "    access_key_id: AKIDACMEX\n"
                                "    secret_access_key: mid-secret\n";

static struct cfg_snapshot *load(const char *text)
{
    struct cfg_snapshot *s = NULL;
    struct cfg_diags d;
    int rc = cfg_load_string("test.yaml", text, strlen(text), &s, &d);
    for (size_t i = 0; i < d.count; i++) {
        print_error("unexpected: %s\n", d.items[i].text);
    }
    assert_int_equal(rc, SL_OK);
    cfg_diags_free(&d);
    return s;
}

static int refs(const struct cfg_snapshot *s)
{
    return __atomic_load_n(&s->_refs, __ATOMIC_SEQ_CST);
}

static void test_find_principal(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load(base_yaml);
    struct cfg_principal p;

    assert_true(cfg_find_principal(s, "AKIDACME", 8, &p));
    assert_int_equal(p.kind, CFG_PRINCIPAL_TENANT);
    assert_string_equal(p.tenant->name, "acme");
    assert_string_equal(p.secret_access_key, "acme-secret");

    /* Not NUL-terminated: the key is a prefix of a longer buffer. */
    const char *buf = "AKIDACMEX/20250101/us-east-1/sqs";
    assert_true(cfg_find_principal(s, buf, 9, &p));
    assert_string_equal(p.tenant->name, "mid");
    assert_true(cfg_find_principal(s, buf, 8, &p));
    assert_string_equal(p.tenant->name, "acme");

    assert_true(cfg_find_principal(s, "AKIDZULU", 8, &p));
    assert_string_equal(p.tenant->name, "zulu");

    assert_true(cfg_find_principal(s, "ADMINKEY", 8, &p));
    assert_int_equal(p.kind, CFG_PRINCIPAL_ADMIN);
    assert_null(p.tenant);
    assert_string_equal(p.secret_access_key, "admin-secret");

    assert_false(cfg_find_principal(s, "AKIDAC", 6, &p));
    assert_false(cfg_find_principal(s, "AKIDACMEXY", 10, &p));
    assert_false(cfg_find_principal(s, "", 0, &p));
    assert_false(cfg_find_principal(s, "zzz", 3, &p));
    cfg_snapshot_unref(s);
}

static void test_many_principals(void **state)
{
    (void)state;
    /* Enough tenants that a broken binary search would miss some. */
    char *yaml = malloc(200 * 100 + 64);
    assert_non_null(yaml);
    size_t n = (size_t)sprintf(yaml, "tenants:\n");
    for (int i = 0; i < 200; i++) {
        n += (size_t)sprintf(yaml + n,
                             "  t%03d:\n    access_key_id: K%d\n    secret_access_key: s%d\n",
                             (i * 7919) % 200, i, i);
    }
    struct cfg_snapshot *s = load(yaml);
    free(yaml);
    assert_int_equal(s->tenant_count, 200);
    for (int i = 0; i < 200; i++) {
        char key[16];
        char secret[16];
        char name[16];
        snprintf(key, sizeof(key), "K%d", i);
        snprintf(secret, sizeof(secret), "s%d", i);
        snprintf(name, sizeof(name), "t%03d", (i * 7919) % 200);
        struct cfg_principal p;
        assert_true(cfg_find_principal(s, key, strlen(key), &p));
        assert_string_equal(p.secret_access_key, secret);
        assert_string_equal(p.tenant->name, name);
        assert_ptr_equal(cfg_find_tenant(s, name, strlen(name)), p.tenant);
    }
    for (size_t i = 1; i < s->tenant_count; i++) {
        assert_true(strcmp(s->tenants[i - 1].name, s->tenants[i].name) < 0);
    }
    cfg_snapshot_unref(s);
}

static void test_find_tenant(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load(base_yaml);
    const struct cfg_tenant *t = cfg_find_tenant(s, "acme/queue", 4);
    assert_non_null(t);
    assert_string_equal(t->name, "acme");
    assert_null(cfg_find_tenant(s, "acm", 3));
    assert_null(cfg_find_tenant(s, "acmee", 5));
    assert_null(cfg_find_tenant(s, "", 0));
    assert_non_null(cfg_find_tenant(s, "zulu", 4));
    cfg_snapshot_unref(s);
}

/* Other modules' tests build snapshots by hand, unsorted and without the
 * index: the lookups must still answer. */
static void test_hand_made_snapshot(void **state)
{
    (void)state;
    struct cfg_tenant tenants[2] = {
        {.name = "zeta", .access_key_id = "KZ", .secret_access_key = "sz"},
        {.name = "alpha", .access_key_id = "KA", .secret_access_key = "sa"},
    };
    struct cfg_snapshot s = {.tenant_count = 2, .tenants = tenants, ._refs = 1};
    s.admin.enabled = true;
    s.admin.access_key_id = "KADMIN";
    s.admin.secret_access_key = "sadmin";
    struct cfg_principal p;
    assert_true(cfg_find_principal(&s, "KA", 2, &p));
    assert_ptr_equal(p.tenant, &tenants[1]);
    assert_true(cfg_find_principal(&s, "KADMIN", 6, &p));
    assert_int_equal(p.kind, CFG_PRINCIPAL_ADMIN);
    assert_false(cfg_find_principal(&s, "K", 1, &p));
    assert_ptr_equal(cfg_find_tenant(&s, "zeta", 4), &tenants[0]);
    assert_null(cfg_find_tenant(&s, "beta", 4));
}

static void test_tenant_name_valid(void **state)
{
    (void)state;
    char max[65];
    memset(max, 'a', 64);
    max[64] = '\0';
    assert_true(cfg_tenant_name_valid("acme", 4));
    assert_true(cfg_tenant_name_valid("A-z_0-9", 7));
    assert_true(cfg_tenant_name_valid(max, 64));
    assert_false(cfg_tenant_name_valid(max, 0));
    assert_false(cfg_tenant_name_valid(
        "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 65));
    assert_false(cfg_tenant_name_valid("a b", 3));
    assert_false(cfg_tenant_name_valid("a/b", 3));
    assert_false(cfg_tenant_name_valid("a.b", 3));
    assert_false(cfg_tenant_name_valid("caf\xc3\xa9", 5));
    assert_false(cfg_tenant_name_valid("a\0b", 3));
}

static void test_snapshot_refcount(void **state)
{
    (void)state;
    struct cfg_snapshot *s = load(base_yaml);
    assert_int_equal(refs(s), 1);
    assert_ptr_equal(cfg_snapshot_ref(s), s);
    assert_int_equal(refs(s), 2);
    cfg_snapshot_unref(s);
    assert_int_equal(refs(s), 1);
    cfg_snapshot_unref(s); /* freed: ASan reports a leak or double free otherwise */
    cfg_snapshot_unref(NULL);
}

static void test_holder_swap_keeps_references(void **state)
{
    (void)state;
    struct cfg_snapshot *first = load(base_yaml);
    struct cfg_snapshot *second = load("partitions: 4\n");
    struct cfg_holder *h = cfg_holder_new(first); /* takes first's reference */
    assert_int_equal(refs(first), 1);

    struct cfg_snapshot *in_flight = cfg_holder_get(h);
    assert_ptr_equal(in_flight, first);
    assert_int_equal(refs(first), 2);

    cfg_holder_swap(h, second);
    assert_int_equal(refs(first), 1);             /* only the request's reference left */
    assert_int_equal(in_flight->tenant_count, 3); /* still readable */

    struct cfg_snapshot *now = cfg_holder_get(h);
    assert_ptr_equal(now, second);
    assert_int_equal(refs(second), 2);
    assert_int_equal(now->partitions, 4);
    cfg_snapshot_unref(now);
    cfg_snapshot_unref(in_flight); /* frees first */

    cfg_holder_free(h); /* frees second */
    cfg_holder_free(NULL);
}

struct reader_arg {
    struct cfg_holder *h;
    int rounds;
    int bad;
};

static void *reader(void *p)
{
    struct reader_arg *a = p;
    for (int i = 0; i < a->rounds; i++) {
        struct cfg_snapshot *s = cfg_holder_get(a->h);
        if (s->partitions < 1 || s->partitions > 3) {
            a->bad++;
        }
        cfg_snapshot_unref(s);
    }
    return NULL;
}

/* Readers take and drop references while the main thread swaps: under
 * ASan/TSan a use-after-free or race in the holder would show here. */
static void test_holder_concurrent_readers(void **state)
{
    (void)state;
    const char *texts[3] = {"partitions: 1\n", "partitions: 2\n", "partitions: 3\n"};
    struct cfg_holder *h = cfg_holder_new(load(texts[0]));
    pthread_t th[2];
    struct reader_arg args[2];
    for (int i = 0; i < 2; i++) {
        args[i] = (struct reader_arg){h, 20000, 0};
        assert_int_equal(pthread_create(&th[i], NULL, reader, &args[i]), 0);
    }
    for (int i = 0; i < 300; i++) {
        cfg_holder_swap(h, load(texts[i % 3]));
    }
    for (int i = 0; i < 2; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].bad, 0);
    }
    struct cfg_snapshot *last = cfg_holder_get(h);
    assert_int_equal(last->partitions, 300 % 3 == 0 ? 3 : 300 % 3);
    assert_int_equal(refs(last), 2);
    cfg_snapshot_unref(last);
    cfg_holder_free(h);
}

static void test_restart_only_changes(void **state)
{
    (void)state;
    struct cfg_snapshot *a = load(base_yaml);
    char changed_yaml[1024];
    snprintf(changed_yaml, sizeof(changed_yaml),
             "listen: 0.0.0.0:9400\ndata_dir: /var/lib/sluice\npartitions: 32\n"
             "admin:\n  listen: \"[::1]:9999\"\n  access_key_id: ADMINKEY\n"
             "  secret_access_key: other\n"
             "tenants:\n  only:\n    access_key_id: K\n    secret_access_key: s\n");
    struct cfg_snapshot *b = load(changed_yaml);
    char buf[512];
    int n = cfg_restart_only_changes(a, b, buf, sizeof(buf));
    assert_int_equal(n, 4);
    assert_string_equal(buf, "listen changed from 127.0.0.1:9324 to 0.0.0.0:9400; data_dir "
                             "changed from ./sluice-data to /var/lib/sluice; partitions changed "
                             "from 16 to 32; admin.listen changed from 127.0.0.1:9325 to "
                             "[::1]:9999");

    /* Truncated output stays a C string and the count stays right. */
    char small[16];
    assert_int_equal(cfg_restart_only_changes(a, b, small, sizeof(small)), 4);
    assert_int_equal(strlen(small), sizeof(small) - 1);
    assert_int_equal(cfg_restart_only_changes(a, b, NULL, 0), 4);
    cfg_snapshot_unref(b);

    /* Tenants, secrets and limits are what a reload is for. */
    b = load("admin:\n  access_key_id: ADMINKEY\n  secret_access_key: changed\n"
             "defaults:\n  limits:\n    burst: 9\n"
             "tenants:\n  other:\n    access_key_id: K\n    secret_access_key: s\n");
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    cfg_snapshot_unref(b);

    b = load("tenants:\n  x:\n    access_key_id: K\n    secret_access_key: s\n");
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "admin was disabled");
    cfg_snapshot_unref(b);
    cfg_snapshot_unref(a);
}

/* A reload keeps the running values of the restart-only keys (so the
 * live snapshot never applies what was reported as needing a restart)
 * and takes everything else from the file. */
static void test_keep_restart_only(void **state)
{
    (void)state;
    struct cfg_snapshot *a = load(base_yaml);
    struct cfg_snapshot *b = load("listen: 0.0.0.0:9400\ndata_dir: /var/lib/sluice\n"
                                  "partitions: 32\nshard_size: 8\nio_threads: 3\n"
                                  "admin:\n  listen: \"[::1]:9999\"\n  access_key_id: ADMINKEY\n"
                                  "  secret_access_key: other\n"
                                  "tenants:\n  only:\n    access_key_id: K\n"
                                  "    secret_access_key: s\n");
    char buf[512];
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 6);
    cfg_snapshot_keep_restart_only(b, a);
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 0);
    assert_int_equal(b->shard_size, a->shard_size);
    assert_int_equal(b->partitions, 16);
    assert_string_equal(b->listen.host, "127.0.0.1");
    assert_string_equal(b->admin.listen.host, "127.0.0.1");
    assert_string_equal(b->data_dir, a->data_dir);
    /* the live keys are the file's */
    assert_string_equal(b->admin.secret_access_key, "other");
    struct cfg_principal who;
    assert_true(cfg_find_principal(b, "K", 1, &who));
    assert_false(cfg_find_principal(b, "AKIDACME", 8, &who));
    cfg_snapshot_unref(b);

    /* admin on/off stays the file's: it decides whether the admin key is
     * valid, and that changes live. */
    b = load("tenants:\n  x:\n    access_key_id: K\n    secret_access_key: s\n");
    cfg_snapshot_keep_restart_only(b, a);
    assert_false(b->admin.enabled);
    assert_false(cfg_find_principal(b, "ADMINKEY", 8, &who));
    cfg_snapshot_unref(b);
    cfg_snapshot_unref(a);
}

/* A one-node cluster section (replication 1) with its secret in the file
 * at secret, and node id and raft port as given. */
static struct cfg_snapshot *load_cluster(const char *secret, unsigned id, unsigned raft_port)
{
    char yaml[1024];
    snprintf(yaml, sizeof(yaml),
             "cluster:\n  node_id: %u\n  raft: 127.0.0.1:%u\n  peer: 127.0.0.1:7100\n"
             "  secret_file: %s\n  replication: 1\n  nodes:\n"
             "    - {id: %u, raft: 127.0.0.1:%u, peer: 127.0.0.1:7100, api: 127.0.0.1:9324}\n",
             id, raft_port, secret, id, raft_port);
    return load(yaml);
}

static void write_secret(const char *path, const char *bytes)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_true(fputs(bytes, f) >= 0);
    fclose(f);
}

/* Every cluster key is restart-only, the secret's bytes too; a reload
 * reports the change by key name, never the secret, and keeps the running
 * section until the restart. */
static void test_cluster_restart_only(void **state)
{
    (void)state;
    char secret[] = "/tmp/sluice-test-secret-XXXXXX";
    int fd = mkstemp(secret);
    assert_true(fd >= 0);
    close(fd);
    const char *first = "first-secret-first-secret-first-secret";
    write_secret(secret, first);
    struct cfg_snapshot *single = load("region: us-east-1\n");
    struct cfg_snapshot *a = load_cluster(secret, 1, 7001);
    char buf[512];
    assert_int_equal(cfg_restart_only_changes(single, a, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "cluster was added");
    assert_int_equal(cfg_restart_only_changes(a, single, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "cluster was removed");

    struct cfg_snapshot *b = load_cluster(secret, 1, 7001);
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    cfg_snapshot_unref(b);

    /* Same path, other bytes. */
    const char *second = "second-secret-second-secret-second-secret";
    write_secret(secret, second);
    b = load_cluster(secret, 2, 7009);
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 1);
    assert_string_equal(buf, "cluster changed (node_id, raft, secret_file, nodes)");
    assert_null(strstr(buf, "second-secret"));

    cfg_snapshot_keep_restart_only(b, a);
    assert_int_equal(cfg_restart_only_changes(a, b, buf, sizeof(buf)), 0);
    assert_true(b->cluster.enabled);
    assert_int_equal(b->cluster.node_id, 1);
    assert_int_equal(b->cluster.raft.port, 7001);
    assert_int_equal(b->cluster.nodes[0].raft.port, 7001);
    assert_int_equal(b->cluster.secret_len, strlen(first));
    assert_memory_equal(b->cluster.secret, first, strlen(first));
    cfg_snapshot_unref(b);

    /* A section added by a reload does not apply before the restart. */
    b = load_cluster(secret, 1, 7001);
    cfg_snapshot_keep_restart_only(b, single);
    assert_false(b->cluster.enabled);
    assert_null(b->cluster.nodes);
    assert_null(b->cluster.secret);
    cfg_snapshot_unref(b);

    cfg_snapshot_unref(a);
    cfg_snapshot_unref(single);
    unlink(secret);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_find_principal),
        cmocka_unit_test(test_many_principals),
        cmocka_unit_test(test_find_tenant),
        cmocka_unit_test(test_hand_made_snapshot),
        cmocka_unit_test(test_tenant_name_valid),
        cmocka_unit_test(test_snapshot_refcount),
        cmocka_unit_test(test_holder_swap_keeps_references),
        cmocka_unit_test(test_holder_concurrent_readers),
        cmocka_unit_test(test_restart_only_changes),
        cmocka_unit_test(test_keep_restart_only),
        cmocka_unit_test(test_cluster_restart_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
