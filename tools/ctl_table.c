/*
 * ctl_table.c -- aligned tables for sluicectl (ctl_table.h).
 *
 * Widths count bytes of ASCII and code points of UTF-8 (a queue name or
 * a message excerpt may hold either), so a row of non-ASCII text still
 * lines up on a UTF-8 terminal.
 */
#include "ctl_table.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "sl.h"

void ctl_table_init(struct ctl_table *t, const char *const *heads)
{
    memset(t, 0, sizeof *t);
    while (heads[t->ncols] != NULL && t->ncols < CTL_TABLE_MAX_COLS) {
        t->head[t->ncols] = heads[t->ncols];
        t->ncols++;
    }
}

void ctl_table_row(struct ctl_table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        t->cap = t->cap != 0 ? t->cap * 2 : 16;
        t->cells = sl_xrealloc(t->cells, t->cap * t->ncols * sizeof *t->cells);
    }
    for (size_t c = 0; c < t->ncols; c++) {
        t->cells[t->nrows * t->ncols + c] = sl_xstrdup(cells[c] != NULL ? cells[c] : "-");
    }
    t->nrows++;
}

void ctl_table_rowf(struct ctl_table *t, const char *fmt, ...)
{
    char text[4096];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    const char *cells[CTL_TABLE_MAX_COLS] = {0};
    char *at = text;
    for (size_t c = 0; c < t->ncols; c++) {
        cells[c] = at;
        char *tab = at != NULL ? strchr(at, '\t') : NULL;
        if (tab != NULL) {
            *tab = '\0';
            at = tab + 1;
        } else {
            at = NULL;
        }
    }
    ctl_table_row(t, cells);
}

/* Display width: UTF-8 continuation bytes take no column. */
static size_t width(const char *s)
{
    size_t w = 0;
    for (; *s != '\0'; s++) {
        w += ((unsigned char)*s & 0xC0u) != 0x80u;
    }
    return w;
}

static bool numeric(const char *s)
{
    if (*s == '-' && s[1] != '\0') {
        s++;
    }
    if (*s == '\0') {
        return false;
    }
    for (; *s != '\0'; s++) {
        if ((*s < '0' || *s > '9') && *s != '.' && *s != '%') {
            return false;
        }
    }
    return true;
}

static void cell(FILE *out, const char *s, size_t w, bool right, bool last)
{
    size_t pad = w - width(s);
    if (right) {
        fprintf(out, "%*s%s", (int)pad, "", s);
    } else if (last) {
        fputs(s, out);
    } else {
        fprintf(out, "%s%*s", s, (int)pad, "");
    }
}

void ctl_table_print(const struct ctl_table *t, FILE *out)
{
    size_t w[CTL_TABLE_MAX_COLS];
    bool right[CTL_TABLE_MAX_COLS];
    for (size_t c = 0; c < t->ncols; c++) {
        w[c] = width(t->head[c]);
        right[c] = t->nrows > 0;
        for (size_t r = 0; r < t->nrows; r++) {
            const char *s = t->cells[r * t->ncols + c];
            w[c] = SL_MAX(w[c], width(s));
            right[c] = right[c] && (numeric(s) || strcmp(s, "-") == 0);
        }
    }
    for (size_t c = 0; c < t->ncols; c++) {
        cell(out, t->head[c], w[c], right[c], c + 1 == t->ncols);
        fputs(c + 1 < t->ncols ? "  " : "\n", out);
    }
    for (size_t r = 0; r < t->nrows; r++) {
        for (size_t c = 0; c < t->ncols; c++) {
            cell(out, t->cells[r * t->ncols + c], w[c], right[c], c + 1 == t->ncols);
            fputs(c + 1 < t->ncols ? "  " : "\n", out);
        }
    }
}

void ctl_table_free(struct ctl_table *t)
{
    for (size_t i = 0; i < t->nrows * t->ncols; i++) {
        free(t->cells[i]);
    }
    free(t->cells);
    memset(t, 0, sizeof *t);
}
