/*
 * part_repl.h -- (partitions-internal) replicated SQLite images
 * (part_repl.c; docs/design.md, "Cluster"): one Raft group per database,
 * libraft for consensus and the log, dqlite's replication VFS for the
 * image. A node runs one Raft thread that drives every group it holds;
 * the thread that writes a group's database (its partition writer) runs
 * its transaction on its own connection and hands the frames over.
 *
 * Writing, on the group's leader, from the one thread that writes it:
 *
 *     part__repl_write_begin(g)        SL_OK: this node leads, go on
 *     BEGIN; ...; COMMIT               on a connection from
 *                                      part__repl_group_open_db()
 *     part__repl_write_end(g, ...)     blocks until a majority holds it
 *
 * Threading: part__repl_new/free and part__repl_group_open on one
 * control thread; the write calls on the group's writer thread (one per
 * group); everything else from any thread. Every VFS call of a group is
 * made under the group's lock, so the Raft thread applying frames and
 * the writer never touch the image at once.
 */
#ifndef SLUICE_PART_REPL_H
#define SLUICE_PART_REPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <sqlite3.h>

#include "part.h"
#include "part_handshake.h"
#include "sl.h"

/* Every image is written with this page size: a frame of the log is one
 * page, and every replica must agree on it. */
#define PART_REPL_PAGE_SIZE 4096u

/* A voter of a group: its node id and the address libraft records for it
 * (the Raft port dials the address its own options give for that id). */
struct part_repl_member {
    uint64_t id;
    const char *address;
};

struct part__raft_node_options;

struct part_repl_options {
    uint64_t node_id;              /* 1..65535 */
    const char *dir;               /* must exist: each group keeps its log in dir/<group>/ */
    unsigned election_timeout_ms;  /* 0: 1000 */
    unsigned heartbeat_timeout_ms; /* 0: 100 */
    unsigned snapshot_entries;     /* 0: 4096 entries between snapshots */
    unsigned snapshot_trailing;    /* 0: 1024 entries kept behind one */
    /* The node's Raft port (part_raft_transport.h): where it listens, the
     * other nodes, the secret and cluster id. Copied; its loop is set to
     * the Raft thread's. Every group of the node travels on it. */
    const struct part__raft_node_options *raft_port;
    /* Leader placement (part__repl_group_prefer): whether node id is fit
     * to take a lead handed over now (called on the Raft thread; NULL:
     * never hand over), and how long a lead is held before it is handed
     * to its preferred node (0: 10000 ms). */
    bool (*steady)(void *arg, uint64_t node_id);
    void *steady_arg;
    unsigned handover_settle_ms;
};

struct part_repl;
struct part_repl_group;

/* Opens this node's Raft port and starts its Raft thread. Returns SL_OK
 * with *out set, SL_EINVAL (a bad node id or port options) or SL_EIO (the
 * port cannot listen, the thread cannot start), with a sentence in err. */
int part__repl_new(const struct part_repl_options *opt, struct part_repl **out, char *err,
                   size_t errlen);

/* Stops every group's hooks: once it returns none runs or will run, so
 * what they touch may go. Before the hooks' objects are freed. */
void part__repl_mute(struct part_repl *r);

/* Closes every group (their logs stay on disk), stops the thread and frees
 * the node. A write waiting for its majority fails with SL_ECLOSED. */
void part__repl_free(struct part_repl *r);

/* What a group tells the code that uses it. Both run on the Raft thread
 * and must be short: every group of the node waits meanwhile. */
struct part_repl_hooks {
    /* part__repl_leading or part__repl_leader may have changed */
    void (*changed)(void *arg);
    /* an entry another node proposed (or this node, in a term it lost)
     * was applied here, with its note; or a snapshot was restored (an
     * empty note). Under the group's lock: image, the Raft thread's own
     * connection, reads the image as it now is. */
    void (*applied)(void *arg, struct sl_slice note, sqlite3 *image);
    void *arg;
};

/* Opens the group `name` (at most 32 bytes of [a-z0-9-]) with members
 * (this node among them; the array is copied) and starts its Raft
 * instance. bootstrap: a pristine group starts with members as its
 * configuration, as every member must do alike on a cluster's first start;
 * a group with a log ignores it. hooks may be NULL (copied). Returns SL_OK with *out set (owned by
 * r), SL_EINVAL (bad name, this node not a member) or SL_EIO (err says). */
int part__repl_group_open(struct part_repl *r, const char *name,
                          const struct part_repl_member *members, size_t member_count,
                          bool bootstrap, const struct part_repl_hooks *hooks,
                          struct part_repl_group **out, char *err, size_t errlen);

/* The node that should lead the group when it can (0: none, the
 * default): a leader that has led for handover_settle_ms and finds that
 * node steady hands it the lead (libraft's leadership transfer), trying
 * again at most every 30 s. Writes are refused (SL_EUNAVAIL) while a
 * transfer is under way, a few milliseconds with a caught-up target.
 * Spreading the preferences spreads the leads, and a node that comes
 * back gets its share again. Any thread. */
void part__repl_group_prefer(struct part_repl_group *g, uint64_t node_id);

/* The group's name ("catalog", "part-0003"), for messages. */
const char *part__repl_group_name(const struct part_repl_group *g);

/* True while this node leads the group and has applied every entry
 * before its term began, so its image is whole: writes may start. */
bool part__repl_leading(const struct part_repl_group *g);

/* True once this node knows a leader of the group and has applied every
 * entry it knows committed (a node that just started, or was cut off, is
 * not): what it reads of the image is then as recent as it can know. */
bool part__repl_caught_up(const struct part_repl_group *g);

/* The id of the group's leader as this node last learnt it, 0 if none. */
uint64_t part__repl_leader(struct part_repl_group *g);

/* Opens a connection to the group's image on this node, set up as the
 * replication VFS needs it, for the group's writer thread, under the
 * group's lock. The caller closes it with sqlite3_close, and uses it only
 * between part__repl_write_begin and _end (or while it alone can touch
 * the image). SL_OK or SL_EIO. */
int part__repl_group_open_db(struct part_repl_group *g, sqlite3 **out);

/* Starts a write on the group: takes the group's lock, held until
 * part__repl_write_end. Returns SL_OK, or SL_EUNAVAIL (nothing taken)
 * when this node does not lead the group or is not ready to. */
int part__repl_write_begin(struct part_repl_group *g);

/* Ends the write begun last: replicates what the transaction committed on
 * this thread's connection, with note (copied; given to the followers'
 * on_apply hook, may be empty), and waits for the outcome. Returns SL_OK
 * once a majority of the group holds it and it is applied here; SL_EUNAVAIL
 * when leadership was lost first (the write may still be committed by the
 * next leader: the caller must not say it was not), with the transaction
 * rolled back here; SL_ECLOSED when the node is closing.
 * A transaction that wrote nothing is SL_OK at once, unless confirm: then
 * its answers were read from this node's image, which a leader deposed
 * without knowing it yet holds stale (a delete finding no row would say
 * success for a message the real leader still has), so it waits for a
 * barrier of its own term first (part__repl_sync's returns). */
int part__repl_write_end(struct part_repl_group *g, struct sl_slice note, bool confirm);

/* On the group's leader: waits until a barrier entry proposed now is
 * committed. Its append carries the commit of every entry before it to
 * the followers, which apply them at once instead of at the next
 * heartbeat: a write then followed by this is visible on a majority's
 * memory when it returns. Returns SL_OK, SL_EUNAVAIL (the lead was lost)
 * or SL_ECLOSED. Not on the Raft thread. */
int part__repl_sync(struct part_repl_group *g);

/* Runs fn with a read connection to the group's image on this node, under
 * the group's lock (so never beside an apply); fn's return value is
 * returned. For reads off the write path: tests, checks, a follower's
 * view. */
int part__repl_read(struct part_repl_group *g, int (*fn)(sqlite3 *db, void *arg), void *arg);

/* As part__repl_read, on the caller's own connection to the image (from
 * part__repl_group_open_db): a thread that reads the image often keeps
 * one, rather than opening and closing one each time. */
int part__repl_read_on(struct part_repl_group *g, sqlite3 *db, int (*fn)(sqlite3 *db, void *arg),
                       void *arg);

/* The Raft port's refused handshakes, by enum part__hs_reject. Any
 * thread. */
void part__repl_port_rejected(const struct part_repl *r, uint64_t out[PART__HS_REJECT_COUNT]);

/* The memory the group's image holds on this node, in bytes, as of the
 * last entry applied: its pages in use (the freelist's excluded; the
 * in-memory WAL, at most a checkpoint's worth of frames, neither). Any
 * thread. */
uint64_t part__repl_image_bytes(const struct part_repl_group *g);
/* The sum of part__repl_image_bytes over the node's groups. Any thread. */
uint64_t part__repl_node_image_bytes(const struct part_repl *r);
/* Fills *out with the group's Raft state as the Raft thread last
 * published it (it looks every 20 ms). Any thread. */
void part__repl_group_stats(const struct part_repl_group *g, struct part_group_stats *out);

/* The nodes the Raft port was configured with, this one included. */
size_t part__repl_node_count(const struct part_repl *r);

/* Entries this node applied to the group's image since the group opened
 * (its own writes included). */
uint64_t part__repl_applied(struct part_repl_group *g);

#endif
