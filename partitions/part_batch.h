/*
 * part_batch.h -- (partitions-internal) what one group-commit batch
 * changes outside SQLite, implemented by part_batch.c.
 */
#ifndef SLUICE_PART_BATCH_H
#define SLUICE_PART_BATCH_H

#include "part_int.h"

/* Everything a batch changes outside SQLite is collected here and applied
 * only after its COMMIT: counters, tenants' statistics, groups' in-flight
 * counts, timer entries it made dead. A rolled-back batch leaves them as
 * they were. */
struct part_delta {
    struct part_queue *q; /* referenced */
    struct part_qdelta c;
    int64_t woke; /* messages that became ready: long polls to wake */
    uint64_t expired;
    uint64_t aged;
    uint64_t dead_lettered;
    bool groups_cleared; /* purged: the queue's group counts start over */
};

struct part_group_delta {
    struct part_queue *q; /* referenced by the queue's struct part_delta */
    char *group;          /* owned */
    int64_t inflight;
};

/* FIFO rows whose group directory counts change with the batch. */
struct part_gnotes {
    struct part_group_delta *v; /* inflight unused */
    size_t n;
    size_t cap;
};

/* A growable list of timer entries. */
struct part_item_list {
    struct part_heap_item *v;
    size_t n;
    size_t cap;
};

struct part_batch {
    uint32_t part; /* the writer's partition */
    struct part_delta *d;
    size_t n;
    size_t cap;
    struct part_group_delta *g;
    size_t ng;
    size_t gcap;
    int64_t *gone; /* rows deleted: all their timer entries are dead */
    size_t ngone;
    size_t gone_cap;
    struct part_item_list stale; /* single entries superseded */
    struct part_item_list fired; /* popped by fire_timers: pushed back if the batch rolls back */
    /* FIFO rows gone: their directory counts drop after the COMMIT */
    struct part_gnotes gdir_gone;
    /* FIFO rows moved in: counted at once, given back if it rolls back */
    struct part_gnotes gdir_added;
    bool sql_failed;
};

/* The change of q in b (made, and q referenced, on first use). Every call
 * is a change of q: it moves q's change generation on b's partition. */
struct part_delta *part__delta_of(struct part_batch *b, struct part_queue *q);
/* A row of FIFO queue q and group became ready (or left, or its group's
 * lock was released) on b's partition: the group is announced to the
 * available groups (part_gheap.h), to be checked by the next receive.
 * Nothing for a standard queue or a NULL group. */
void part__note_available(struct part_batch *b, struct part_queue *q, const char *group);
/* Tests: announcements are skipped, so that only the change generation's
 * rebuild can find a group. */
extern _Atomic bool part__test_skip_announce;
/* v messages of q entered (v > 0) or left (v < 0) state in lane. */
void part__delta_state(struct part_batch *b, struct part_queue *q, int state, int lane, int64_t v);
/* A row of q goes from (state, lane) to (to_state, to_lane); group (may be
 * NULL) is its message group. */
void part__delta_move(struct part_batch *b, struct part_queue *q, int state, int lane, int to_state,
                      int to_lane, const char *group);
/* A row of q leaves the partition (deleted, expired, moved away); on a
 * FIFO queue its group's directory count drops after the COMMIT. */
void part__delta_gone(struct part_batch *b, struct part_queue *q, int state, int lane,
                      const char *group);
/* group's in-flight count on q changes by inflight (group NULL: none). */
void part__note_group(struct part_batch *b, struct part_queue *q, const char *group,
                      int64_t inflight);
/* The sum of group's in-flight changes on q noted in b so far. */
int64_t part__batch_group_delta(const struct part_batch *b, const struct part_queue *q,
                                const char *group);
/* What part__delta_gone does to the directory, alone (purges count the
 * states in bulk). Nothing for a standard queue or a NULL group. */
void part__note_gdir_gone(struct part_batch *b, struct part_queue *q, const char *group);
/* A row of FIFO queue q and group moves in on w's partition in this
 * batch: the group directory counts it now (a receive later in the same
 * transaction must see it), given back if the batch rolls back. */
void part__gdir_move_in(struct part_writer *w, struct part_batch *b, struct part_queue *q,
                        const char *group);
/* After the COMMIT: the directory counts of the FIFO rows gone; a group
 * that its oldest partition no longer holds is announced on the next one
 * (its long polls are woken, as by a send). */
void part__batch_gdir_apply(struct part_writer *w, struct part_batch *b);
/* After a ROLLBACK: the counts part__gdir_move_in took are given back. */
void part__batch_gdir_undo(struct part_writer *w, struct part_batch *b);
/* The group directory made p the first partition of a group of q: p's
 * writer may lease it now (any thread). */
void part__gdir_handed_over(struct part_queue *q, uint32_t p);
/* Row rowid is gone: all its timer entries are dead. */
void part__note_gone(struct part_batch *b, int64_t rowid);
/* One timer entry was superseded. */
void part__note_stale(struct part_batch *b, uint64_t due, int64_t rowid, uint8_t kind);
void part__item_list_add(struct part_item_list *l, uint64_t due, int64_t rowid, uint8_t kind);
/* After the COMMIT: the group counts of partition w->index. */
void part__batch_groups_apply(struct part_writer *w, struct part_batch *b);
/* Ready for the next batch (drops the references it took). */
/* A cluster's entry carries its batch's counter changes, so that every
 * replica counts every partition (docs/design.md "Cluster"): per queue
 * changed, its id, the five counts and the messages made ready, each a
 * big-endian int64. */
#define PART_NOTE_DELTA_BYTES 56u
struct part_note_delta {
    uint64_t queue_id;
    struct part_qdelta c;
    int64_t woke;
};
/* Appends b's note to out (emptied first). */
void part__batch_note(const struct part_batch *b, struct sl_buf *out);
/* The i-th delta of a note into *d; false past its end. A note whose
 * length is not a whole number of deltas has none. */
bool part__note_delta(struct sl_slice note, size_t i, struct part_note_delta *d);

void part__batch_clear(struct part_batch *b);
/* Frees the arrays of a cleared batch. */
void part__batch_free(struct part_batch *b);

#endif
