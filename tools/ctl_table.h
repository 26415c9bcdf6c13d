/*
 * ctl_table.h -- sluicectl's aligned tables (ctl_table.c): a header row
 * and rows of cells, each column as wide as its widest cell, numbers
 * right-aligned so that their digits line up, two spaces between
 * columns. Cells are copied; a table owns its strings until
 * ctl_table_free().
 */
#ifndef SLUICE_CTL_TABLE_H
#define SLUICE_CTL_TABLE_H

#include <stddef.h>
#include <stdio.h>

#define CTL_TABLE_MAX_COLS 10

struct ctl_table {
    size_t ncols;
    const char *head[CTL_TABLE_MAX_COLS]; /* borrowed (string literals) */
    char **cells;                         /* nrows * ncols, owned */
    size_t nrows;
    size_t cap;
};

/* heads is NULL-terminated; at most CTL_TABLE_MAX_COLS. */
void ctl_table_init(struct ctl_table *t, const char *const *heads);
/* Appends a row of ncols cells (NULL prints as "-"). */
void ctl_table_row(struct ctl_table *t, const char *const *cells);
/* Appends a row formatted cell by cell: fmt has one conversion per cell,
 * separated by '\t'. */
void ctl_table_rowf(struct ctl_table *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void ctl_table_print(const struct ctl_table *t, FILE *out);
void ctl_table_free(struct ctl_table *t);

#endif
