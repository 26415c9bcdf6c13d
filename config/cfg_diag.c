/*
 * cfg_diag.c -- collects validation problems as "FILE:LINE:COLUMN: message"
 * and hands them out in file order, so --check-config prints them the way a
 * reader walks the file whatever order the validator found them in.
 *
 * Threading: a collector belongs to one load on one thread.
 * Ownership: the collector owns its texts until cfg__diagbuf_finish() moves
 * them into the caller's struct cfg_diags (freed by cfg_diags_free).
 */
#include "cfg_int.h"

#include "sl.h"

#include <stdio.h>
#include <stdlib.h>

void cfg__diagbuf_init(struct cfg__diagbuf *db, const char *name)
{
    db->name = name;
    db->items = NULL;
    db->count = 0;
    db->cap = 0;
}

void cfg__diag_add(struct cfg__diagbuf *db, uint32_t line, uint32_t column, const char *fmt, ...)
{
    struct sl_buf text;
    sl_buf_init(&text);
    if (line > 0) {
        sl_buf_printf(&text, "%s:%u:%u: ", db->name, line, column);
    } else {
        sl_buf_printf(&text, "%s: ", db->name);
    }
    va_list ap;
    va_start(ap, fmt);
    sl_buf_vprintf(&text, fmt, ap);
    va_end(ap);

    if (db->count == db->cap) {
        db->cap = db->cap ? db->cap * 2 : 8;
        db->items = sl_xrealloc(db->items, db->cap * sizeof(db->items[0]));
    }
    struct cfg_diag *d = &db->items[db->count++];
    d->text = sl_buf_take(&text, NULL);
    d->line = line;
    d->column = column;
}

/* Ties keep the order of discovery: qsort is not stable, so each item
 * carries its original index as the last sort key. */
struct indexed_diag {
    struct cfg_diag d;
    size_t seq;
};

static int cmp_diag(const void *a, const void *b)
{
    const struct indexed_diag *x = a;
    const struct indexed_diag *y = b;
    if (x->d.line != y->d.line) {
        return x->d.line < y->d.line ? -1 : 1;
    }
    if (x->d.column != y->d.column) {
        return x->d.column < y->d.column ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : (x->seq > y->seq);
}

void cfg__diagbuf_finish(struct cfg__diagbuf *db, struct cfg_diags *out)
{
    out->count = 0;
    out->items = NULL;
    if (db->count == 0) {
        cfg__diagbuf_fini(db);
        return;
    }
    struct indexed_diag *tmp = sl_xcalloc(db->count, sizeof(*tmp));
    for (size_t i = 0; i < db->count; i++) {
        tmp[i].d = db->items[i];
        tmp[i].seq = i;
    }
    qsort(tmp, db->count, sizeof(*tmp), cmp_diag);
    for (size_t i = 0; i < db->count; i++) {
        db->items[i] = tmp[i].d;
    }
    free(tmp);
    out->count = db->count;
    out->items = db->items;
    db->items = NULL;
    db->count = 0;
    db->cap = 0;
}

void cfg__diagbuf_fini(struct cfg__diagbuf *db)
{
    for (size_t i = 0; i < db->count; i++) {
        free(db->items[i].text);
    }
    free(db->items);
    db->items = NULL;
    db->count = 0;
    db->cap = 0;
}

void cfg_diags_free(struct cfg_diags *d)
{
    if (d == NULL) {
        return;
    }
    for (size_t i = 0; i < d->count; i++) {
        free(d->items[i].text);
    }
    free(d->items);
    d->items = NULL;
    d->count = 0;
}
