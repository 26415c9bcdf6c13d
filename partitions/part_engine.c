/*
 * part_engine.c -- the engine: open and close, the manifest, the writer
 * and catalog threads' start and stop, and the engine-wide reads
 * (part_engine_key, _partition_ok, _stats, ...).
 *
 * Stack: the top of the module. Opening installs the run-time hooks
 * (part_client.c, part_poll.c) before any thread starts, then opens the
 * catalog (part_catalog_db.c) and the partitions (part_writer.c). Nothing
 * in the module calls back into this file.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sqlite3.h>

#include "part_catalog.h"
#include "part_catalog_db.h"
#include "part_client.h"
#include "part_disk.h"
#include "part_fwd.h"
#include "part_handshake.h"
#include "part_poll.h"
#include "part_raft_transport.h"
#include "part_repl.h"
#include "part_writer.h"

#define LOG_MOD "partitions"
#define MANIFEST_MAGIC "sluice-partitions"
#define MANIFEST_VERSION 1

/* ---- manifest ---------------------------------------------------------- */

int part__manifest_write(const struct part_engine *e, const char *dir, char *err, size_t errlen)
{
    char path[4096], tmp[4096], hex[2 * PART_KEY_LEN + 1];
    snprintf(path, sizeof path, "%s/manifest", dir);
    snprintf(tmp, sizeof tmp, "%s/manifest.tmp", dir);
    sl_hex_encode(e->key, PART_KEY_LEN, hex);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
        return SL_EIO;
    }
    fchmod(fileno(f), 0600);
    fprintf(f, "%s %d\npartitions %u\nkey %s\n", MANIFEST_MAGIC, MANIFEST_VERSION, e->nparts, hex);
    bool ok = fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok = fclose(f) == 0 && ok;
    if (!ok || rename(tmp, path) != 0 || sl_fsync_path(dir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    return SL_OK;
}

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* Returns SL_OK with *have set (0 when there is no manifest yet). */
static int manifest_read(struct part_engine *e, uint32_t *have, char *err, size_t errlen)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest", e->data_dir);
    *have = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT) {
            return SL_OK;
        }
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    char magic[32] = "", hex[2 * PART_KEY_LEN + 16] = "";
    int version = 0;
    unsigned parts = 0;
    int n = fscanf(f, "%31s %d partitions %u key %72s", magic, &version, &parts, hex);
    fclose(f);
    if (n != 4 || strcmp(magic, MANIFEST_MAGIC) != 0 || strlen(hex) != (size_t)2 * PART_KEY_LEN ||
        parts == 0) {
        snprintf(err, errlen, "%s: not a sluice manifest", path);
        return SL_EIO;
    }
    if (version != MANIFEST_VERSION) {
        snprintf(err, errlen, "%s: format version %d, this build reads %d", path, version,
                 MANIFEST_VERSION);
        return SL_EIO;
    }
    for (int i = 0; i < PART_KEY_LEN; i++) {
        int hi = hexval(hex[(size_t)2 * (size_t)i]), lo = hexval(hex[(size_t)2 * (size_t)i + 1]);
        if (hi < 0 || lo < 0) {
            snprintf(err, errlen, "%s: bad key", path);
            return SL_EIO;
        }
        e->key[i] = (uint8_t)(hi << 4 | lo);
    }
    *have = parts;
    return SL_OK;
}

/* A manifest that says N partitions promises catalog.db and
 * part-0000..N-1 exist: a missing one is a lost file (a restore cut short,
 * an operator's rm), not a file to start afresh -- an empty partition would
 * silently drop every message it held, and an empty catalog would orphan
 * every queue's messages in the partitions. */
static int parts_present(const struct part_engine *e, uint32_t have, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    snprintf(path, sizeof path, "%s/catalog.db", e->data_dir);
    if (have > 0 && lstat(path, &st) != 0) {
        snprintf(err, errlen,
                 "%s: %s, but the manifest says the directory is in use: refusing to open "
                 "(restore the data directory from a backup; an empty catalog would lose every "
                 "queue)",
                 path, strerror(errno));
        return SL_EIO;
    }
    for (uint32_t p = 0; p < have; p++) {
        snprintf(path, sizeof path, "%s/part-%04u.db", e->data_dir, p);
        if (lstat(path, &st) != 0) {
            snprintf(err, errlen,
                     "%s: %s, but the manifest says %u partitions: refusing to open (restore "
                     "the data directory from a backup; an empty partition would lose its "
                     "messages)",
                     path, strerror(errno), have);
            return SL_EIO;
        }
    }
    return SL_OK;
}

/* Creates part-NNNN.db for from <= p < to, and catalog.db on a first
 * start (from == 0), empty, before the manifest names them: a crash
 * between the manifest's write and the first open must not leave a
 * manifest whose files look lost. SQLite takes an empty file for an empty
 * database. */
static int create_empty(const char *path, char *err, size_t errlen)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return SL_EIO;
    }
    close(fd);
    return SL_OK;
}

static int parts_create(const struct part_engine *e, uint32_t from, uint32_t to, char *err,
                        size_t errlen)
{
    char path[4096];
    int rc = SL_OK;
    if (from == 0) {
        snprintf(path, sizeof path, "%s/catalog.db", e->data_dir);
        rc = create_empty(path, err, errlen);
    }
    for (uint32_t p = from; p < to && rc == SL_OK; p++) {
        snprintf(path, sizeof path, "%s/part-%04u.db", e->data_dir, p);
        rc = create_empty(path, err, errlen);
    }
    if (rc == SL_OK && sl_fsync_path(e->data_dir) != SL_OK) {
        snprintf(err, errlen, "%s: %s", e->data_dir, strerror(errno));
        rc = SL_EIO;
    }
    return rc;
}

/* ---- a cluster's node ---------------------------------------------------- */

/* Every node derives the same engine key (placement, receipt MACs) and
 * cluster id from the shared secret, so a receipt handle stays valid on
 * whichever node leads its partition next, with nothing to replicate. */
static void derive(const struct part_cluster_options *c, const char *label, uint8_t out[32])
{
    unsigned len = 32;
    SL_ASSERT(HMAC(EVP_sha256(), c->secret, (int)c->secret_len, (const unsigned char *)label,
                   strlen(label), out, &len) != NULL);
}

/* A node is fit to take a lead handed over once this node's peer link to
 * it has stayed up this long: a node that just came back has had time to
 * catch up from the log (a transfer to one still behind waits for it,
 * refusing writes meanwhile). */
#define STEADY_LINK_MS 3000u

static bool steady(void *arg, uint64_t node_id)
{
    struct part_engine *e = arg;
    uint64_t since = e->fwd != NULL ? part__fwd_up_since(e->fwd, (uint16_t)node_id) : 0;
    return since != 0 && sl_mono_ns() / 1000000u - since >= STEADY_LINK_MS;
}

/* Starts this node's Raft thread and port, under data_dir/raft. */
static int cluster_node(struct part_engine *e, const struct part_cluster_options *c,
                        const uint8_t cluster_id[32], char *err, size_t errlen)
{
    const struct part_cluster_node *self = NULL;
    for (size_t i = 0; i < c->node_count; i++) {
        if (c->nodes[i].id == c->node_id) {
            self = &c->nodes[i];
        }
    }
    if (self == NULL || c->secret == NULL || c->secret_len == 0) {
        snprintf(err, errlen, "cluster: node %u is not among the nodes, or no secret", c->node_id);
        return SL_EINVAL;
    }
    derive(c, "sluice engine key v1", e->key);
    e->memory_budget = c->memory_budget;
    if (e->memory_budget == 0) {
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        e->memory_budget =
            pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page / 2 : UINT64_MAX;
    }
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/raft", e->data_dir);
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "%s: %s", dir, strerror(errno));
        return SL_EIO;
    }
    struct part__raft_peer *peers = sl_xcalloc(c->node_count, sizeof *peers);
    for (size_t i = 0; i < c->node_count; i++) {
        peers[i] =
            (struct part__raft_peer){c->nodes[i].id, c->nodes[i].raft_host, c->nodes[i].raft_port};
    }
    struct part__raft_node_options port = {.id = c->node_id,
                                           .host = self->raft_host,
                                           .port = self->raft_port,
                                           .peers = peers,
                                           .peer_count = c->node_count,
                                           .secret = c->secret,
                                           .secret_len = c->secret_len};
    memcpy(port.cluster_id, cluster_id, sizeof port.cluster_id);
    struct part_repl_options o = {.node_id = c->node_id,
                                  .dir = dir,
                                  .election_timeout_ms = c->election_timeout_ms,
                                  .snapshot_entries = c->snapshot_entries,
                                  .raft_port = &port,
                                  .steady = steady,
                                  .steady_arg = e,
                                  .handover_settle_ms = c->handover_settle_ms};
    int rc = part__repl_new(&o, &e->repl, err, errlen);
    free(peers);
    return rc;
}

/* The node that should lead group k (0: the catalog, 1 + p: partition p):
 * the k-th of the node ids in order, round the ring, so leads spread
 * evenly and come back to a node that returns. */
static uint64_t preferred_leader(const struct part_cluster_options *c, uint32_t k)
{
    size_t rank = k % c->node_count;
    for (size_t i = 0; i < c->node_count; i++) {
        size_t below = 0;
        for (size_t j = 0; j < c->node_count; j++) {
            below += c->nodes[j].id < c->nodes[i].id;
        }
        if (below == rank) {
            return c->nodes[i].id;
        }
    }
    return 0;
}

/* Opens the catalog's group and every partition's, each with every node
 * as a voter; a first start bootstraps them alike on every node. */
static int cluster_groups(struct part_engine *e, const struct part_cluster_options *c, char *err,
                          size_t errlen)
{
    struct part_repl_member *members = sl_xcalloc(c->node_count, sizeof *members);
    char(*addresses)[64] = sl_xcalloc(c->node_count, sizeof *addresses);
    for (size_t i = 0; i < c->node_count; i++) {
        snprintf(addresses[i], sizeof addresses[i], "%s:%u", c->nodes[i].raft_host,
                 c->nodes[i].raft_port);
        members[i] = (struct part_repl_member){c->nodes[i].id, addresses[i]};
    }
    struct part_repl_hooks hooks = part__catalog_repl_hooks(e);
    int rc = part__repl_group_open(e->repl, "catalog", members, c->node_count, true, &hooks,
                                   &e->catw.group, err, errlen);
    for (uint32_t p = 0; p < e->nparts && rc == SL_OK; p++) {
        char name[16];
        snprintf(name, sizeof name, "part-%04u", p);
        hooks = part__writer_repl_hooks(&e->writers[p]);
        rc = part__repl_group_open(e->repl, name, members, c->node_count, true, &hooks,
                                   &e->writers[p].group, err, errlen);
    }
    free(addresses);
    free(members);
    return rc;
}

/* ---- engine ------------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *msg)
{
    if (err != NULL && errlen > 0) {
        snprintf(err, errlen, "%s", msg);
    }
}

/* SQLite's memory statistics take a process-wide mutex around every one
 * of its allocations (about 25 per message) and nothing here reads them.
 * sqlite3_config must come before SQLite initialises; if something in the
 * process used SQLite first it refuses (SQLITE_MISUSE), which only keeps
 * the statistics on.
 *
 * A cluster's node keeps them on: dqlite 1.11's VFS grows the array of a
 * transaction's frames to 8n + 1 bytes where it stores n + 1 pointers, and
 * only the statistics' path rounds every allocation up to 8 bytes, which
 * gives the missing 7. Without it, an allocator that keeps sizes exact
 * (ASan's, TSan's) copies a truncated pointer on the next realloc and
 * dqlite_vfs_poll dies on it; glibc's malloc hides it with slack. The
 * first engine of a process decides. */
static pthread_once_t sqlite_once = PTHREAD_ONCE_INIT;
static bool sqlite_stats_off;

static void sqlite_setup(void)
{
    if (sqlite_stats_off) {
        (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    }
}

/* Takes data_dir/lock for this process: two engines over the same files
 * would each keep their own counts, timers, group directory, dedup index
 * and sequence clock, and one's consumers would not see the other's
 * acknowledged messages. flock(2), so the kernel drops the lock with the
 * process, kill -9 included; the file keeps the holder's pid for the
 * message the next one prints. Returns the descriptor, or -1 with buf
 * set and *rc SL_EBUSY (held) or SL_EIO. */
static int lock_data_dir(const char *data_dir, char *buf, size_t buflen, int *rc)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/lock", data_dir);
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        snprintf(buf, buflen, "%s: %s", path, strerror(errno));
        *rc = SL_EIO;
        return -1;
    }
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        int e = errno;
        char holder[32] = "";
        ssize_t n = pread(fd, holder, sizeof holder - 1, 0);
        holder[n > 0 ? n : 0] = '\0';
        holder[strcspn(holder, "\n")] = '\0';
        if (e == EWOULDBLOCK) {
            snprintf(buf, buflen,
                     "%s is in use by another sluiced (pid %s); one data_dir serves one process",
                     data_dir, holder[0] != '\0' ? holder : "unknown");
            *rc = SL_EBUSY;
        } else {
            snprintf(buf, buflen, "%s: %s", path, strerror(e));
            *rc = SL_EIO;
        }
        close(fd);
        return -1;
    }
    char pid[32];
    int len = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
    if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)len, 0) != len) {
        /* the pid is only for the message above: the lock is what counts */
        sl_log(SL_LOG_WARN, LOG_MOD, "%s: cannot record the pid: %s", path, strerror(errno));
    }
    return fd;
}

/* The rest of part_engine_open for a cluster's node: no manifest (P is
 * the configuration's, the key derived), the catalog and partitions as
 * Raft groups. */
static int cluster_open(struct part_engine *e, const struct part_cluster_options *c,
                        struct part_engine **out, char *err, size_t errlen)
{
    char buf[512] = "";
    e->nparts = e->opt.partitions;
    e->node_id = c->node_id;
    /* One id for both ports' handshakes, derived once. It binds what
     * every node must agree on and cannot change in a running cluster
     * (the partition count, hence every group's name and every tenant's
     * shard): a node configured otherwise is refused as another cluster
     * (other_cluster) rather than replicating a different layout. */
    uint8_t cluster_id[32];
    char label[64];
    snprintf(label, sizeof label, "sluice cluster id v1 partitions=%u", e->nparts);
    derive(c, label, cluster_id);
    int rc = cluster_node(e, c, cluster_id, buf, sizeof buf);
    if (rc == SL_OK) {
        part__disk_open(e);
        rc = part__catalog_db_open(e, buf, sizeof buf);
    }
    if (rc == SL_OK) {
        e->writers = sl_xcalloc(e->nparts, sizeof *e->writers);
        for (uint32_t p = 0; p < e->nparts; p++) {
            part__writer_open(e, &e->writers[p], p);
        }
        rc = cluster_groups(e, c, buf, sizeof buf);
    }
    if (rc == SL_OK) {
        rc = part__fwd_new(e, c, cluster_id, buf, sizeof buf);
    }
    if (rc == SL_OK) {
        /* Only now: a preference makes the Raft thread ask steady(),
         * which reads e->fwd. */
        part__repl_group_prefer(e->catw.group, preferred_leader(c, 0));
        for (uint32_t p = 0; p < e->nparts; p++) {
            part__repl_group_prefer(e->writers[p].group, preferred_leader(c, p + 1));
        }
    }
    if (rc != SL_OK) {
        set_err(err, errlen, buf);
        sl_log(SL_LOG_ERROR, LOG_MOD, "cluster: %s", buf);
        if (e->writers != NULL) {
            for (uint32_t p = 0; p < e->nparts; p++) {
                part__writer_stop(&e->writers[p]); /* none started */
            }
            free(e->writers);
        }
        if (e->catalog.by_id != NULL) {
            part__catalog_db_close(e);
            part__disk_close(e);
        }
        part__repl_free(e->repl);
        pthread_mutex_destroy(&e->clients_mu);
        close(e->lock_fd);
        free(e->data_dir);
        free(e);
        return rc;
    }
    for (uint32_t p = 0; p < e->nparts; p++) {
        SL_ASSERT(part__writer_start(&e->writers[p]) == SL_OK);
    }
    SL_ASSERT(part__catalog_db_start(e) == SL_OK);
    sl_log(SL_LOG_INFO, LOG_MOD, "opened %s: node %u of a cluster of %zu, %u partitions",
           e->data_dir, c->node_id, c->node_count, e->nparts);
    *out = e;
    return SL_OK;
}

int part_engine_open(const struct part_options *opt, struct part_engine **out, char *err,
                     size_t errlen)
{
    sqlite_stats_off = opt != NULL && opt->cluster == NULL; /* read once, by sqlite_setup */
    pthread_once(&sqlite_once, sqlite_setup);
    char buf[512] = "";
    if (opt == NULL || opt->data_dir == NULL || opt->partitions == 0 ||
        opt->partitions > PART_MAX_PARTITIONS) {
        set_err(err, errlen, "partitions: need a data_dir and 1..4096 partitions");
        return SL_EINVAL;
    }
    if (mkdir(opt->data_dir, 0700) != 0 && errno != EEXIST) {
        snprintf(buf, sizeof buf, "%s: %s", opt->data_dir, strerror(errno));
        set_err(err, errlen, buf);
        return SL_EIO;
    }
    int lock_rc = SL_OK;
    int lock_fd = lock_data_dir(opt->data_dir, buf, sizeof buf, &lock_rc);
    if (lock_fd < 0) {
        set_err(err, errlen, buf);
        return lock_rc;
    }
    struct part_engine *e = sl_xcalloc(1, sizeof *e);
    e->lock_fd = lock_fd;
    e->opt = *opt;
    e->data_dir = sl_xstrdup(opt->data_dir);
    e->opt.data_dir = e->data_dir;
    e->opt.cluster = NULL; /* borrowed: what the engine keeps is in e->repl */
    pthread_mutex_init(&e->clients_mu, NULL);
    part__client_install(e);
    part__poll_install(e);
    if (opt->cluster != NULL) {
        return cluster_open(e, opt->cluster, out, err, errlen);
    }
    uint32_t have = 0;
    int rc = manifest_read(e, &have, buf, sizeof buf);
    if (rc == SL_OK && have > opt->partitions) {
        snprintf(buf, sizeof buf,
                 "%s holds %u partitions; refusing to open it with %u (shrinking would strand "
                 "messages; set partitions: %u or more)",
                 opt->data_dir, have, opt->partitions, have);
        rc = SL_EINVAL;
    }
    if (rc == SL_OK) {
        rc = parts_present(e, have, buf, sizeof buf);
    }
    e->nparts = opt->partitions;
    if (rc == SL_OK && have == 0) {
        sl_random_bytes(e->key, PART_KEY_LEN);
    }
    if (rc == SL_OK && have != opt->partitions) {
        if (have != 0) {
            sl_log(SL_LOG_INFO, LOG_MOD, "growing from %u to %u partitions", have, opt->partitions);
        }
        rc = parts_create(e, have, opt->partitions, buf, sizeof buf);
        if (rc == SL_OK) {
            rc = part__manifest_write(e, e->data_dir, buf, sizeof buf);
        }
    }
    if (rc == SL_OK) {
        part__disk_open(e); /* before the files open: they may need the reserve */
        rc = part__catalog_db_open(e, buf, sizeof buf);
        if (rc != SL_OK) {
            part__disk_close(e);
        }
    }
    if (rc != SL_OK) {
        set_err(err, errlen, buf);
        if (e->catalog.by_id != NULL) {
            part__catalog_db_close(e);
        }
        pthread_mutex_destroy(&e->clients_mu);
        close(e->lock_fd);
        free(e->data_dir);
        free(e);
        return rc;
    }
    e->writers = sl_xcalloc(e->nparts, sizeof *e->writers);
    for (uint32_t p = 0; p < e->nparts; p++) {
        /* failure: partition marked failed, or opened later on a full disk */
        part__writer_open(e, &e->writers[p], p);
    }
    for (uint32_t p = 0; p < e->nparts; p++) {
        SL_ASSERT(part__writer_start(&e->writers[p]) == SL_OK);
    }
    SL_ASSERT(part__catalog_db_start(e) == SL_OK);
    sl_log(SL_LOG_INFO, LOG_MOD, "opened %s: %u partitions, durability %s", e->data_dir, e->nparts,
           opt->durability == PART_DURABILITY_FSYNC ? "fsync" : "os");
    *out = e;
    return SL_OK;
}

void part_engine_close(struct part_engine *e)
{
    if (e == NULL) {
        return;
    }
    part_engine_drain_polls(e);
    atomic_store(&e->closing, true);
    part__repl_mute(e->repl); /* its hooks touch the threads stopped below */
    part__fwd_stop(e->fwd);   /* nothing more comes from other nodes */
    /* The catalog first: a queue delete it finishes submits purges. */
    part__catalog_db_stop(e);
    for (uint32_t p = 0; p < e->nparts; p++) {
        part__writer_stop(&e->writers[p]);
    }
    free(e->writers);
    part__fwd_free(e->fwd);
    part__catalog_db_close(e);
    part__repl_free(e->repl); /* after every connection to its images */
    part__disk_close(e);
    pthread_mutex_destroy(&e->clients_mu);
    sl_log(SL_LOG_INFO, LOG_MOD, "closed %s", e->data_dir);
    close(e->lock_fd); /* last: the files are closed and synced */
    free(e->data_dir);
    free(e);
}

const uint8_t *part_engine_key(const struct part_engine *e)
{
    return e->key;
}

uint16_t part_engine_node_id(const struct part_engine *e)
{
    return e->node_id;
}

_Static_assert(PART_CLUSTER_REJECT_REASONS == PART__HS_REJECT_COUNT,
               "part.h's count of refusal reasons is the handshake's");

int part_engine_cluster_stats(const struct part_engine *e, struct part_cluster_stats *out)
{
    memset(out, 0, sizeof *out);
    if (e->repl == NULL) {
        return SL_EINVAL;
    }
    part__repl_port_rejected(e->repl, out->raft_rejected);
    part__fwd_stats(e->fwd, out);
    out->image_bytes = part__repl_node_image_bytes(e->repl);
    out->memory_budget = e->memory_budget;
    out->budget_refusals = atomic_load(&e->budget_refusals);
    out->nodes_configured = (uint32_t)part__repl_node_count(e->repl);
    return SL_OK;
}

const char *part_cluster_reject_reason(size_t i)
{
    return i < PART__HS_REJECT_COUNT ? part__hs_reject_name((enum part__hs_reject)i) : NULL;
}

bool part_engine_node_reachable(const struct part_engine *e, uint16_t id)
{
    if (e->repl == NULL || id == 0) {
        return false;
    }
    return id == e->node_id || part__fwd_up_since(e->fwd, id) != 0;
}

bool part_engine_ready(const struct part_engine *e)
{
    return e->repl == NULL ||
           (atomic_load(&e->catalog_synced) && part__repl_caught_up(e->catw.group));
}

/* A cluster's group of partition p, or of the catalog; NULL on one node
 * and for a p out of range. */
static struct part_repl_group *group_of(const struct part_engine *e, uint32_t p)
{
    if (e->repl == NULL) {
        return NULL;
    }
    return p == PART_CATALOG ? e->catw.group : p < e->nparts ? e->writers[p].group : NULL;
}

uint64_t part_engine_leader(const struct part_engine *e, uint32_t p)
{
    struct part_repl_group *g = group_of(e, p);
    return g != NULL ? part__repl_leader(g) : 0;
}

int part_engine_group_stats(const struct part_engine *e, uint32_t p, struct part_group_stats *out)
{
    memset(out, 0, sizeof *out);
    struct part_repl_group *g = group_of(e, p);
    if (g == NULL) {
        return SL_EINVAL;
    }
    part__repl_group_stats(g, out);
    return SL_OK;
}

uint32_t part_engine_partitions(const struct part_engine *e)
{
    return e->nparts;
}

bool part_engine_partition_ok(const struct part_engine *e, uint32_t p)
{
    return p < e->nparts && part__partition_ok(e, p);
}

int64_t part_engine_partition_queued(const struct part_engine *e, uint32_t p)
{
    return p < e->nparts ? atomic_load(&e->writers[p].queued) : 0;
}

int64_t part_engine_partition_load(const struct part_engine *e, uint32_t p)
{
    if (p >= e->nparts) {
        return 0;
    }
    const struct part_writer *w = &e->writers[p];
    int64_t load = atomic_load_explicit(&w->backlog, memory_order_relaxed) +
                   atomic_load_explicit(&w->queued_cost, memory_order_relaxed);
    return load > 0 ? load : 0; /* the two are read apart: never below empty */
}

void part_engine_kick(struct part_engine *e)
{
    part__kick_writers(e);
}

static void flush_one(struct part_queue *q, void *arg)
{
    part__flush_waiters(q, SL_OK);
}

void part_engine_drain_polls(struct part_engine *e)
{
    atomic_store(&e->draining, true);
    part__queue_foreach(e, flush_one, NULL);
}

/* ---- statistics -------------------------------------------------------- */

int part_engine_stats(const struct part_engine *e, uint32_t p, struct part_partition_stats *out)
{
    if (p >= e->nparts) {
        return SL_EINVAL;
    }
    struct part_writer *w = &e->writers[p];
    out->commits = atomic_load_explicit(&w->stat_commits, memory_order_relaxed);
    out->jobs = atomic_load_explicit(&w->stat_jobs, memory_order_relaxed);
    out->commit_us = atomic_load_explicit(&w->stat_commit_us, memory_order_relaxed);
    out->batch_us = atomic_load_explicit(&w->stat_batch_us, memory_order_relaxed);
    out->failed = atomic_load(&w->failed);
    out->timers = atomic_load_explicit(&w->stat_timers, memory_order_relaxed);
    out->fifo_select_steps = atomic_load_explicit(&w->stat_fifo_steps, memory_order_relaxed);
    out->fifo_dedup_ids = atomic_load_explicit(&w->stat_dedup_ids, memory_order_relaxed);
    out->backlog = atomic_load_explicit(&w->backlog, memory_order_relaxed);
    out->queued_cost = atomic_load_explicit(&w->queued_cost, memory_order_relaxed);
    return SL_OK;
}
