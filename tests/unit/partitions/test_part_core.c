/*
 * test_part_core.c -- the engine's core: send / receive / delete, priority
 * order, counters, the catalog, receipt handles, purge, restart recovery,
 * growing P, a missing partition and a corrupt partition.
 */
#include <sys/stat.h>

#include "part_test_util.h"

static void test_send_receive_delete(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "jobs", NULL);
    t_send(t, q, 0, "one");
    t_send(t, q, 0, "two");
    t_send(t, q, 0, "three");
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 3);
    assert_int_equal(c.inflight, 0);

    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.status, SL_OK);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[0].body, "one"); /* same priority: FIFO by sequence */
    assert_string_equal(r.msgs[1].body, "two");
    assert_string_equal(r.msgs[2].body, "three");
    assert_int_equal(r.msgs[0].receive_count, 1);
    assert_int_equal(r.msgs[0].sent_ms, T_START_MS);
    assert_int_equal(r.msgs[0].first_receive_ms, T_START_MS);
    assert_int_equal(strlen(r.msgs[0].id), 36);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 0);
    assert_int_equal(c.inflight, 3);
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 0);
    assert_int_equal(inflight, 3);

    struct t_done none;
    t_recv(t, q, 10, 30, &none);
    assert_int_equal(none.count, 0);

    for (int i = 0; i < 3; i++) {
        struct t_done d;
        t_delete(t, q, r.msgs[i].receipt, &d);
        assert_int_equal(d.entry[0], SL_OK);
    }
    c = t_counts(t, q);
    assert_int_equal(c.inflight, 0);
    assert_int_equal(c.ready, 0);
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(inflight, 0);
    /* deleting again: already gone, SQS answers success */
    struct t_done d;
    t_delete(t, q, r.msgs[0].receipt, &d);
    assert_int_equal(d.entry[0], SL_OK);
}

static void test_batch_send_and_groups(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "batch", NULL);
    struct part_send_entry en[3] = {
        {.body = SL_SLICE_LIT("a"), .delay_s = -1, .group_id = SL_SLICE_LIT("g1")},
        {.body = SL_SLICE_LIT("b"), .delay_s = -1},
        {.body = SL_SLICE_LIT("c"), .delay_s = -1, .group_id = SL_SLICE_LIT("g2")},
    };
    struct t_done d;
    assert_int_equal(part_send(t->c, q, 1, en, 3, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.count, 3);
    assert_string_not_equal(d.sent_ids[0], d.sent_ids[1]);
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 3);
    assert_string_equal(r.msgs[0].group, "g1");
    assert_string_equal(r.msgs[1].group, "");
    assert_string_equal(r.msgs[2].group, "g2");
    assert_int_equal(r.msgs[0].partition, 1);
    assert_string_equal(r.msgs[0].id, d.sent_ids[0]);
    /* bad arguments are refused at submit, no completion */
    assert_int_equal(part_send(t->c, q, 1, en, 0, t_ck(&d), t_on_done), SL_EINVAL);
    assert_int_equal(part_send(t->c, q, 2, en, 1, t_ck(&d), t_on_done), SL_EINVAL);
    assert_int_equal(part_send(t->c, 999, 0, en, 1, t_ck(&d), t_on_done), SL_ENOTFOUND);
}

static void test_priority_order(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "prio", NULL);
    struct t_done d;
    t_send_ex(t, q, 0, "p5", -1, true, 5, &d);
    t_send_ex(t, q, 1, "p1", -1, true, 1, &d);
    t_send_ex(t, q, 0, "p3", -1, true, 3, &d);
    t_send_ex(t, q, 1, "p4", -1, true, 4, &d);
    t_send_ex(t, q, 0, "p2", -1, true, 2, &d);
    const char *want[] = {"p1", "p2", "p3", "p4", "p5"};
    for (int i = 0; i < 5; i++) {
        struct t_done r;
        t_recv(t, q, 1, 30, &r);
        assert_int_equal(r.count, 1);
        assert_string_equal(r.msgs[0].body, want[i]);
    }
    /* within one partition a batch receive is ordered too */
    t_send_ex(t, q, 0, "late", -1, true, 9, &d);
    t_send_ex(t, q, 0, "early", -1, true, -7, &d);
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 2);
    assert_string_equal(r.msgs[0].body, "early");
    assert_int_equal(r.msgs[0].priority, -7);
}

static void test_catalog(void **state)
{
    struct t_env *t = *state;
    struct part_queue_config cfg = part_queue_config_default();
    cfg.visibility_timeout_s = 45;
    struct part_kv attrs[] = {{"VisibilityTimeout", "45"}, {"Policy", "{}"}};
    struct part_kv tags[] = {{"team", "blue"}};
    struct t_done d;
    assert_int_equal(
        part_queue_create(t->c, "acme", "orders", &cfg, attrs, 2, tags, 1, t_ck(&d), t_on_done),
        SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    uint64_t id = d.queue_id;
    assert_true(id > 0);

    /* same name again: SL_EEXIST with the existing queue */
    assert_int_equal(
        part_queue_create(t->c, "acme", "orders", NULL, NULL, 0, NULL, 0, t_ck(&d), t_on_done),
        SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_EEXIST);
    assert_int_equal(d.queue_id, id);

    uint64_t found = 0;
    struct part_queue_config got;
    assert_int_equal(part_queue_find(t->e, "acme", "orders", &found, &got), SL_OK);
    assert_int_equal(found, id);
    assert_int_equal(got.visibility_timeout_s, 45);
    assert_int_equal(part_queue_find(t->e, "other", "orders", &found, NULL), SL_ENOTFOUND);

    t_create(t, "acme", "alpha", NULL);
    t_create(t, "acme", "orders-dlq", NULL);
    t_create(t, "zeta", "orders", NULL);
    struct part_queue_list l;
    part_queue_list(t->e, "acme", "or", &l);
    assert_int_equal(l.count, 2);
    assert_string_equal(l.items[0].name, "orders");
    assert_string_equal(l.items[1].name, "orders-dlq");
    part_queue_list_free(&l);
    part_queue_list(t->e, NULL, NULL, &l);
    assert_int_equal(l.count, 4);
    assert_string_equal(l.items[0].name, "alpha");
    assert_string_equal(l.items[3].tenant, "zeta");
    part_queue_list_free(&l);

    /* attributes: typed fields replaced, map upserted / removed */
    struct part_kv chg[] = {{"Policy", NULL}, {"DelaySeconds", "5"}};
    cfg.delay_s = 5;
    assert_int_equal(part_queue_set_attributes(t->c, id, &cfg, chg, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    struct part_queue_info *qi = NULL;
    assert_int_equal(part_queue_get(t->e, id, &qi), SL_OK);
    assert_int_equal(qi->cfg.delay_s, 5);
    assert_int_equal(qi->attr_count, 2);
    assert_string_equal(qi->attrs[0].key, "DelaySeconds");
    assert_string_equal(qi->attrs[1].key, "VisibilityTimeout");
    assert_int_equal(qi->tag_count, 1);
    part_queue_info_free(qi);

    struct part_kv more[] = {{"env", "prod"}, {"team", "red"}};
    assert_int_equal(part_queue_tag(t->c, id, more, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    const char *rm[] = {"env", "missing"};
    assert_int_equal(part_queue_untag(t->c, id, rm, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(part_queue_get(t->e, id, &qi), SL_OK);
    assert_int_equal(qi->tag_count, 1);
    assert_string_equal(qi->tags[0].value, "red");
    part_queue_info_free(qi);

    /* DLQ sources */
    uint64_t dlq = 0;
    part_queue_find(t->e, "acme", "orders-dlq", &dlq, NULL);
    cfg.dlq_target_id = dlq;
    cfg.max_receive_count = 3;
    assert_int_equal(part_queue_set_attributes(t->c, id, &cfg, NULL, 0, t_ck(&d), t_on_done),
                     SL_OK);
    t_wait(t, &d);
    part_queue_dlq_sources(t->e, dlq, &l);
    assert_int_equal(l.count, 1);
    assert_int_equal(l.items[0].id, id);
    part_queue_list_free(&l);

    /* delete: messages go, name reusable, new id */
    t_send(t, id, 0, "x");
    t_send(t, id, 1, "y");
    int64_t backlog, inflight;
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 2);
    assert_int_equal(part_queue_delete(t->c, id, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.purged, 2);
    assert_int_equal(part_queue_find(t->e, "acme", "orders", &found, NULL), SL_ENOTFOUND);
    part_tenant_counts(t->e, "acme", &backlog, &inflight);
    assert_int_equal(backlog, 0);
    assert_int_equal(part_queue_delete(t->c, id, t_ck(&d), t_on_done), SL_ENOTFOUND);
    uint64_t again = t_create(t, "acme", "orders", NULL);
    assert_true(again != id);
    struct t_done r;
    t_recv(t, again, 10, 30, &r);
    assert_int_equal(r.count, 0);

    /* the catalog survives a restart */
    t_close(t);
    t_open(t);
    assert_int_equal(part_queue_find(t->e, "acme", "orders", &found, NULL), SL_OK);
    assert_int_equal(found, again);
    assert_int_equal(part_queue_get(t->e, found, &qi), SL_OK);
    assert_string_equal(qi->tenant, "acme");
    part_queue_info_free(qi);
    uint64_t newest = t_create(t, "acme", "fresh", NULL);
    assert_true(newest > again); /* ids never reused */
}

static void test_receipts(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "rh", NULL);
    uint64_t other = t_create(t, "acme", "rh2", NULL);
    t_send(t, q, 1, "m");
    struct t_done r1;
    t_recv(t, q, 1, 30, &r1);
    assert_int_equal(r1.count, 1);

    struct part_receipt rh;
    const char *h = r1.msgs[0].receipt;
    assert_int_equal(part_receipt_decode(t->e, h, strlen(h), &rh), SL_OK);
    assert_int_equal(rh.partition, 1);
    assert_int_equal(rh.queue_id, q);
    assert_int_equal(rh.receive_gen, 1);

    /* forged: flip one character of the MAC / body */
    char forged[PART_RECEIPT_MAX];
    snprintf(forged, sizeof forged, "%s", h);
    forged[10] = forged[10] == 'A' ? 'B' : 'A';
    assert_int_equal(part_receipt_decode(t->e, forged, strlen(forged), &rh), SL_EINVAL);
    assert_int_equal(part_receipt_decode(t->e, "garbage", 7, &rh), SL_EINVAL);
    const char *bad[] = {forged, "", "!!!!", h};
    struct t_done d;
    assert_int_equal(part_delete(t->c, other, bad, 4, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.count, 4);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(d.entry[i], SL_EINVAL); /* the last: another queue's handle */
    }
    struct part_visibility_entry ve = {forged, 10};
    assert_int_equal(part_change_visibility(t->c, q, &ve, 1, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.entry[0], SL_EINVAL);

    /* stale: re-received since; change visibility refuses it */
    t_chvis(t, q, h, 0, &d);
    assert_int_equal(d.entry[0], SL_OK);
    struct t_done r2;
    t_recv(t, q, 1, 30, &r2);
    assert_int_equal(r2.count, 1);
    assert_int_equal(r2.msgs[0].receive_count, 2);
    assert_string_not_equal(r2.msgs[0].receipt, h);
    t_chvis(t, q, h, 10, &d);
    assert_int_equal(d.entry[0], SL_ENOTFOUND);
    /* a standard queue deletes with a stale handle, as SQS standard does */
    t_delete(t, q, h, &d);
    assert_int_equal(d.entry[0], SL_OK);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight + c.ready, 0);
    t_chvis(t, q, r2.msgs[0].receipt, 10, &d);
    assert_int_equal(d.entry[0], SL_ENOTFOUND); /* gone */

    /* FIFO: a stale handle does not delete what another consumer holds */
    uint64_t f = t_create_fifo(t, "rh.fifo", false);
    t_send_fifo(t, f, 0, "f", "g", "d", &d);
    t_recv(t, f, 1, 30, &r1);
    t_chvis(t, f, r1.msgs[0].receipt, 0, &d);
    t_recv(t, f, 1, 30, &r2);
    t_delete(t, f, r1.msgs[0].receipt, &d);
    assert_int_equal(d.entry[0], SL_ENOTFOUND); /* SQS: the handle has expired */
    assert_int_equal(t_counts(t, f).inflight, 1);
    t_delete(t, f, r2.msgs[0].receipt, &d);
    assert_int_equal(t_counts(t, f).inflight, 0);
}

/* A new queue with two messages (one on each of partitions 0 and 1),
 * both leased into r. */
static uint64_t lease_two(struct t_env *t, const char *name, struct t_done *r)
{
    uint64_t q = t_create(t, "acme", name, NULL);
    t_send(t, q, 0, "a");
    t_send(t, q, 1, "b");
    t_recv(t, q, 10, 30, r);
    assert_int_equal(r->count, 2);
    return q;
}

/* Receipts the caller decoded: the same outcomes as handles, and the
 * queue and partition are checked again. */
static void test_decoded_receipts(void **state)
{
    struct t_env *t = *state;
    uint64_t other = t_create(t, "acme", "dec2", NULL);
    struct t_done r, d;
    uint64_t q = lease_two(t, "dec", &r);
    struct part_receipt rh[2];
    for (int i = 0; i < 2; i++) {
        const char *h = r.msgs[i].receipt;
        assert_int_equal(part_receipt_decode(t->e, h, strlen(h), &rh[i]), SL_OK);
    }

    /* another queue's receipts, and one naming a partition out of range */
    struct part_receipt far = rh[0];
    far.partition = t->nparts;
    assert_int_equal(part_delete_decoded(t->c, other, rh, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.count, 2);
    assert_int_equal(d.entry[0], SL_EINVAL);
    assert_int_equal(d.entry[1], SL_EINVAL);
    uint32_t vis[2] = {0, 100};
    assert_int_equal(part_change_visibility_decoded(t->c, q, &far, vis, 1, t_ck(&d), t_on_done),
                     SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.entry[0], SL_EINVAL);
    assert_int_equal(part_change_visibility_decoded(t->c, q, rh, NULL, 2, t_ck(&d), t_on_done),
                     SL_EINVAL);
    assert_int_equal(part_delete_decoded(t->c, q, rh, 0, t_ck(&d), t_on_done), SL_EINVAL);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.inflight, 2);

    /* the first ready again, the second leased on; then both deleted */
    assert_int_equal(part_change_visibility_decoded(t->c, q, rh, vis, 2, t_ck(&d), t_on_done),
                     SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.entry[0], SL_OK);
    assert_int_equal(d.entry[1], SL_OK);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 1);
    assert_int_equal(part_delete_decoded(t->c, q, rh, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.entry[0], SL_OK);
    assert_int_equal(d.entry[1], SL_OK);
    c = t_counts(t, q);
    assert_int_equal(c.ready + c.inflight + c.delayed, 0);
}

static void test_change_visibility_and_purge(void **state)
{
    struct t_env *t = *state;
    struct t_done r, d;
    uint64_t q = lease_two(t, "cv", &r);
    struct part_visibility_entry ve[2] = {{r.msgs[0].receipt, 0}, {r.msgs[1].receipt, 100}};
    assert_int_equal(part_change_visibility(t->c, q, ve, 2, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.entry[0], SL_OK);
    assert_int_equal(d.entry[1], SL_OK);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 1);
    assert_int_equal(c.inflight, 1);
    struct part_counts p0, p1;
    assert_int_equal(part_queue_counts(t->e, q, r.msgs[0].partition, &p0), SL_OK);
    assert_int_equal(part_queue_counts(t->e, q, r.msgs[1].partition, &p1), SL_OK);
    assert_int_equal(p0.ready, 1);
    assert_int_equal(p1.inflight, 1);
    assert_int_equal(part_queue_counts(t->e, q, 7, &p0), SL_EINVAL);

    t_send(t, q, 0, "c");
    assert_int_equal(part_purge(t->c, q, t_ck(&d), t_on_done), SL_OK);
    t_wait(t, &d);
    assert_int_equal(d.status, SL_OK);
    assert_int_equal(d.purged, 3);
    c = t_counts(t, q);
    assert_int_equal(c.ready + c.inflight + c.delayed, 0);
}

static void test_restart_recovery(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "durable", NULL);
    for (int i = 0; i < 5; i++) {
        char b[16];
        snprintf(b, sizeof b, "m%d", i);
        t_send(t, q, (uint32_t)i % 2, b);
    }
    struct t_done r;
    t_recv(t, q, 2, 30, &r);
    assert_int_equal(r.count, 2);
    uint8_t key[PART_KEY_LEN];
    memcpy(key, part_engine_key(t->e), PART_KEY_LEN);
    t_close(t);

    t_open(t);
    assert_memory_equal(key, part_engine_key(t->e), PART_KEY_LEN);
    struct part_counts c = t_counts(t, q);
    assert_int_equal(c.ready, 3);
    assert_int_equal(c.inflight, 2);
    /* the old receipt still works after restart */
    struct t_done d;
    t_chvis(t, q, r.msgs[0].receipt, 60, &d);
    assert_int_equal(d.entry[0], SL_OK);
    /* the other lease ends when it would have */
    t_advance(t, 30000);
    t_sync(t);
    c = t_counts(t, q);
    assert_int_equal(c.ready, 4);
    assert_int_equal(c.inflight, 1);
    struct t_done all;
    t_recv(t, q, 10, 30, &all);
    assert_int_equal(all.count, 4);
}

static void test_grow_and_shrink(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "g", NULL);
    t_send(t, q, 1, "kept");
    t_close(t);
    t->nparts = 4;
    t_open(t);
    assert_int_equal(part_engine_partitions(t->e), 4);
    assert_int_equal(part_engine_partition_queued(t->e, 3), 0);
    assert_int_equal(part_engine_partition_queued(t->e, 99), 0);
    t_send(t, q, 3, "new");
    assert_int_equal(t_counts(t, q).ready, 2);
    t_close(t);

    struct part_options o = {.data_dir = t->dir, .partitions = 2};
    struct part_engine *e = NULL;
    char err[512] = "";
    assert_int_equal(part_engine_open(&o, &e, err, sizeof err), SL_EINVAL);
    assert_non_null(strstr(err, "refusing"));
    t_open(t); /* still 4: nothing was harmed */
    assert_int_equal(t_counts(t, q).ready, 2);
}

/* One data_dir serves one engine: a second open of the same directory,
 * while the first engine is open, is refused with SL_EBUSY and the
 * holder's pid, touches nothing, and succeeds once the first is closed. */
static void test_data_dir_is_locked(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "l", NULL);
    t_send(t, q, 0, "held");
    /* t's clock: on the wall clock the message would have expired */
    struct part_options o = {.data_dir = t->dir,
                             .partitions = t->nparts,
                             .now_ms = t_clock,
                             .clock_ctx = (void *)&t->now};
    struct part_engine *e = NULL;
    char err[512] = "";
    assert_int_equal(part_engine_open(&o, &e, err, sizeof err), SL_EBUSY);
    assert_null(e);
    char want[64];
    snprintf(want, sizeof want, "in use by another sluiced (pid %ld)", (long)getpid());
    assert_non_null(strstr(err, want));
    assert_int_equal(t_counts(t, q).ready, 1); /* the first engine is unharmed */
    t_close(t);
    assert_int_equal(part_engine_open(&o, &e, err, sizeof err), SL_OK);
    part_engine_close(e);
    t_open(t);
    assert_int_equal(t_counts(t, q).ready, 1);
}

/* Closes t after a queue got a message on partition `held_by`, removes
 * data_dir/name with its -wal and -shm, and expects opening with
 * `partitions` to fail with SL_EIO, an error naming the file, and the file
 * still absent (nothing was created in its place). Returns the error. */
static const char *lose_file(struct t_env *t, uint32_t held_by, const char *name,
                             uint32_t partitions, char err[512])
{
    uint64_t q = t_create(t, "acme", "m", NULL);
    t_send(t, q, held_by, "held");
    t_close(t);
    char path[256];
    const char *suffix[] = {"", "-wal", "-shm"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s%s", t->dir, name, suffix[i]);
        unlink(path);
    }
    struct part_options o = {.data_dir = t->dir, .partitions = partitions};
    struct part_engine *e = NULL;
    err[0] = '\0';
    assert_int_equal(part_engine_open(&o, &e, err, 512), SL_EIO);
    assert_null(e);
    assert_non_null(strstr(err, name));
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", t->dir, name);
    assert_int_equal(lstat(path, &st), -1);
    return err;
}

/* The manifest says 2 partitions and part-0001.db is gone (a restore cut
 * short, an rm): the engine refuses to open rather than start that
 * partition empty, and creates nothing. Growing P (above) still makes
 * the new files. */
static void test_missing_partition(void **state)
{
    struct t_env *t = *state;
    char err[512];
    assert_non_null(strstr(lose_file(t, 1, "part-0001.db", 2, err), "manifest says 2 partitions"));
    /* growing does not paper over it either */
    struct part_options o = {.data_dir = t->dir, .partitions = 3};
    struct part_engine *e = NULL;
    assert_int_equal(part_engine_open(&o, &e, err, sizeof err), SL_EIO);
    char path[256];
    struct stat st;
    snprintf(path, sizeof path, "%s/part-0001.db", t->dir);
    assert_int_equal(lstat(path, &st), -1);
    snprintf(path, sizeof path, "%s/part-0002.db", t->dir);
    assert_int_equal(lstat(path, &st), -1);
}

/* The same for catalog.db: without it every queue's messages would sit
 * in the partitions with no queue to name them. */
static void test_missing_catalog(void **state)
{
    char err[512];
    (void)lose_file(*state, 0, "catalog.db", 2, err);
}

static void test_corrupt_partition(void **state)
{
    struct t_env *t = *state;
    uint64_t q = t_create(t, "acme", "c", NULL);
    t_send(t, q, 0, "safe");
    t_close(t);
    char path[256];
    snprintf(path, sizeof path, "%s/part-0001.db", t->dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    for (int i = 0; i < 4096; i++) {
        fputs("not a database! ", f);
    }
    fclose(f);
    snprintf(path, sizeof path, "%s/part-0001.db-wal", t->dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/part-0001.db-shm", t->dir);
    unlink(path);

    t_open(t);
    assert_true(part_engine_partition_ok(t->e, 0));
    assert_false(part_engine_partition_ok(t->e, 1));
    struct t_done d;
    t_send_ex(t, q, 1, "lost", -1, false, 0, &d);
    assert_int_equal(d.status, SL_EIO);
    t_send(t, q, 0, "fine");
    struct t_done r;
    t_recv(t, q, 10, 30, &r);
    assert_int_equal(r.count, 2);
}

/* Jobs submitted from a completion callback are corked: they reach the
 * writers together when the burst of callbacks is over (one group here),
 * in submission order. */
struct resubmit {
    struct t_env *t;
    uint64_t q;
    struct t_done seed;
    struct t_done sends[21];
    size_t queued_inside; /* writer queue depths seen inside the callback */
};

static void on_seed_sent(struct part_cookie ck, int status, const struct part_result *res)
{
    struct resubmit *rs = ck.ptr;
    t_on_done((struct part_cookie){&rs->seed, 0, 0}, status, res);
    for (int i = 0; i < 21; i++) {
        char body[8];
        snprintf(body, sizeof body, "m%02d", i);
        struct part_send_entry en = {.body = sl_slice_cstr(body), .delay_s = -1};
        uint32_t p = i == 20 ? 1 : 0;
        assert_int_equal(part_send(rs->t->c, rs->q, p, &en, 1, t_ck(&rs->sends[i]), t_on_done),
                         SL_OK);
    }
    rs->queued_inside = (size_t)(part_engine_partition_queued(rs->t->e, 0) +
                                 part_engine_partition_queued(rs->t->e, 1));
}

static void test_callback_submissions_corked(void **state)
{
    struct t_env *t = *state;
    struct resubmit *rs = calloc(1, sizeof *rs);
    rs->t = t;
    rs->q = t_create(t, "acme", "jobs", NULL);
    struct part_partition_stats s0, s1;
    assert_int_equal(part_engine_stats(t->e, 0, &s0), SL_OK);
    struct part_send_entry en = {.body = SL_SLICE_LIT("seed"), .delay_s = -1};
    assert_int_equal(
        part_send(t->c, rs->q, 1, &en, 1, (struct part_cookie){rs, 0, 0}, on_seed_sent), SL_OK);
    t_wait(t, &rs->seed);
    for (int i = 0; i < 21; i++) {
        t_wait(t, &rs->sends[i]);
        assert_int_equal(rs->sends[i].status, SL_OK);
    }
    assert_int_equal(rs->queued_inside, 0);
    assert_int_equal(part_engine_stats(t->e, 0, &s1), SL_OK);
    assert_int_equal(s1.commits - s0.commits, 1);
    assert_int_equal(s1.jobs - s0.jobs, 20);
    struct t_done r;
    uint32_t p0 = 0;
    struct part_receive_req req = {
        .queue_id = rs->q, .partitions = &p0, .partition_count = 1, .max_messages = 10};
    assert_int_equal(part_receive(t->c, &req, t_ck(&r), t_on_done, NULL), SL_OK);
    t_wait(t, &r);
    assert_int_equal(r.count, 10);
    for (int i = 0; i < 10; i++) {
        char body[8];
        snprintf(body, sizeof body, "m%02d", i);
        assert_string_equal(r.msgs[i].body, body);
        assert_int_equal(r.msgs[i].partition, 0);
    }
    free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_send_receive_delete, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_batch_send_and_groups, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_priority_order, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_catalog, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_receipts, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_decoded_receipts, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_change_visibility_and_purge, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_restart_recovery, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_grow_and_shrink, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_data_dir_is_locked, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_missing_partition, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_missing_catalog, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_corrupt_partition, t_setup, t_teardown),
        cmocka_unit_test_setup_teardown(test_callback_submissions_corked, t_setup, t_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
