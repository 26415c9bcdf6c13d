/*
 * cfg_yaml.c -- YAML text to a raw tree of scalars, mappings and sequences,
 * each node carrying its 1-based line:column, through libyaml's event API.
 *
 * The tree knows nothing of sluice's keys; cfg_validate.c gives it meaning.
 * What is wrong at the YAML level is reported here: syntax errors (at
 * libyaml's problem mark), several documents, aliases (a configuration
 * needs none, and refusing them rules out alias bombs), non-scalar keys,
 * duplicate keys in one mapping, and nesting beyond CFG_MAX_DEPTH.
 *
 * The builder is iterative (an explicit stack), so hostile input cannot
 * exhaust the C stack; freeing recurses at most CFG_MAX_DEPTH deep.
 *
 * Threading: none. Ownership: the caller owns the tree (cfg__node_free).
 */
#include "cfg_int.h"

#include "sl.h"

#include <stdlib.h>
#include <string.h>
#include <yaml.h>

struct frame {
    struct cfg__node *container; /* a mapping or a sequence */
    struct cfg__node *key;       /* mappings: a key waiting for its value */
    size_t cap;                  /* capacity of pairs or items */
};

struct builder {
    struct cfg__diagbuf *db;
    struct cfg__node *root;
    struct frame stack[CFG_MAX_DEPTH];
    size_t depth;
    int documents;
};

static uint32_t mark_line(const yaml_mark_t *m)
{
    return (uint32_t)m->line + 1;
}

static uint32_t mark_column(const yaml_mark_t *m)
{
    return (uint32_t)m->column + 1;
}

bool cfg__node_is_null(const struct cfg__node *n)
{
    if (n->kind != CFG__SCALAR || !n->plain) {
        return false;
    }
    static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
    for (size_t i = 0; i < SL_ARRAY_LEN(nulls); i++) {
        if (strcmp(n->value, nulls[i]) == 0 && strlen(nulls[i]) == n->len) {
            return true;
        }
    }
    return false;
}

void cfg__node_free(struct cfg__node *n)
{
    if (n == NULL) {
        return;
    }
    free(n->value);
    if (n->kind == CFG__MAPPING) {
        for (size_t i = 0; i < n->count; i++) {
            cfg__node_free(n->pairs[i].key);
            cfg__node_free(n->pairs[i].value);
        }
    } else if (n->kind == CFG__SEQUENCE) {
        for (size_t i = 0; i < n->count; i++) {
            cfg__node_free(n->items[i]);
        }
    }
    free(n->pairs);
    free(n->items);
    free(n);
}

static struct cfg__node *node_new(enum cfg__node_kind kind, const yaml_mark_t *m)
{
    struct cfg__node *n = sl_xcalloc(1, sizeof(*n));
    n->kind = kind;
    n->line = mark_line(m);
    n->column = mark_column(m);
    return n;
}

/* Attaches n where the YAML structure puts it. Returns SL_OK, or
 * SL_EINVAL (n already freed, the problem reported) when n is a
 * non-scalar mapping key. */
static int attach(struct builder *b, struct cfg__node *n)
{
    if (b->depth == 0) {
        b->root = n;
        return SL_OK;
    }
    struct frame *f = &b->stack[b->depth - 1];
    struct cfg__node *c = f->container;
    if (c->kind == CFG__SEQUENCE) {
        if (c->count == f->cap) {
            f->cap = f->cap ? f->cap * 2 : 4;
            c->items = sl_xrealloc(c->items, f->cap * sizeof(c->items[0]));
        }
        c->items[c->count++] = n;
        return SL_OK;
    }
    if (f->key == NULL) {
        if (n->kind != CFG__SCALAR) {
            cfg__diag_add(b->db, n->line, n->column,
                          "mapping keys must be strings, not a mapping or a list");
            cfg__node_free(n);
            return SL_EINVAL;
        }
        f->key = n;
        return SL_OK;
    }
    if (c->count == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 4;
        c->pairs = sl_xrealloc(c->pairs, f->cap * sizeof(c->pairs[0]));
    }
    c->pairs[c->count].key = f->key;
    c->pairs[c->count].value = n;
    c->count++;
    f->key = NULL;
    return SL_OK;
}

/* qsort has no context argument in C17; the mapping being sorted is passed
 * through this thread-local instead. */
static _Thread_local const struct cfg__node *sorting;

static int cmp_pair_index(const void *a, const void *b)
{
    const struct cfg__node *m = sorting;
    size_t i = *(const size_t *)a;
    size_t j = *(const size_t *)b;
    const struct cfg__node *x = m->pairs[i].key;
    const struct cfg__node *y = m->pairs[j].key;
    size_t n = SL_MIN(x->len, y->len);
    int c = memcmp(x->value, y->value, n);
    if (c != 0) {
        return c;
    }
    if (x->len != y->len) {
        return x->len < y->len ? -1 : 1;
    }
    return i < j ? -1 : (i > j);
}

/* Reports every key that repeats an earlier one of the same mapping and
 * drops its pair, so validation sees each key once (the first). Sorting
 * indices keeps this O(n log n) for a large tenants: mapping. */
static void drop_duplicate_keys(struct cfg__node *m, struct cfg__diagbuf *db)
{
    if (m->count < 2) {
        return;
    }
    size_t *order = sl_xcalloc(m->count, sizeof(*order));
    bool *dup = sl_xcalloc(m->count, sizeof(*dup));
    for (size_t i = 0; i < m->count; i++) {
        order[i] = i;
    }
    sorting = m;
    qsort(order, m->count, sizeof(*order), cmp_pair_index);
    sorting = NULL;
    size_t first = order[0];
    for (size_t k = 1; k < m->count; k++) {
        const struct cfg__node *a = m->pairs[first].key;
        const struct cfg__node *b = m->pairs[order[k]].key;
        if (a->len == b->len && memcmp(a->value, b->value, a->len) == 0) {
            dup[order[k]] = true;
        } else {
            first = order[k];
        }
    }
    /* Report in file order; name the first occurrence's line. */
    size_t kept = 0;
    for (size_t i = 0; i < m->count; i++) {
        if (!dup[i]) {
            m->pairs[kept++] = m->pairs[i];
            continue;
        }
        const struct cfg__node *k = m->pairs[i].key;
        uint32_t first_line = 0;
        for (size_t j = 0; j < kept; j++) {
            const struct cfg__node *e = m->pairs[j].key;
            if (e->len == k->len && memcmp(e->value, k->value, k->len) == 0) {
                first_line = e->line;
                break;
            }
        }
        cfg__diag_add(db, k->line, k->column, "duplicate key \"%.*s\" (first defined on line %u)",
                      (int)SL_MIN(k->len, 64), k->value, first_line);
        cfg__node_free(m->pairs[i].key);
        cfg__node_free(m->pairs[i].value);
    }
    m->count = kept;
    free(order);
    free(dup);
}

/* Where a reader error (bad encoding, control characters) sits: libyaml
 * gives only a byte offset for those. Columns count characters. */
static void offset_to_mark(const char *text, size_t len, size_t offset, uint32_t *line,
                           uint32_t *column)
{
    uint32_t l = 1;
    uint32_t c = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        unsigned char ch = (unsigned char)text[i];
        if (ch == '\n') {
            l++;
            c = 1;
        } else if ((ch & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *column = c;
}

static void report_parser_error(const yaml_parser_t *p, const char *text, size_t len,
                                struct cfg__diagbuf *db)
{
    const char *problem = p->problem != NULL ? p->problem : "cannot parse";
    uint32_t line;
    uint32_t column;
    if (p->error == YAML_READER_ERROR) {
        offset_to_mark(text, len, p->problem_offset, &line, &column);
    } else {
        line = mark_line(&p->problem_mark);
        column = mark_column(&p->problem_mark);
    }
    cfg__diag_add(db, line, column, "yaml syntax error: %s", problem);
}

/* Handles one event. Returns SL_OK, or SL_EINVAL (reported) when parsing
 * must stop. */
static int on_event(struct builder *b, const yaml_event_t *ev)
{
    const yaml_mark_t *m = &ev->start_mark;
    struct cfg__node *n;
    switch (ev->type) {
    case YAML_DOCUMENT_START_EVENT:
        if (++b->documents > 1) {
            cfg__diag_add(b->db, mark_line(m), mark_column(m), "only one yaml document is allowed");
            return SL_EINVAL;
        }
        return SL_OK;
    case YAML_ALIAS_EVENT:
        cfg__diag_add(b->db, mark_line(m), mark_column(m), "yaml aliases are not supported");
        return SL_EINVAL;
    case YAML_SCALAR_EVENT:
        n = node_new(CFG__SCALAR, m);
        n->len = ev->data.scalar.length;
        n->value = sl_xmalloc(n->len + 1);
        memcpy(n->value, ev->data.scalar.value, n->len);
        n->value[n->len] = '\0';
        n->plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
        return attach(b, n);
    case YAML_SEQUENCE_START_EVENT:
    case YAML_MAPPING_START_EVENT:
        if (b->depth == CFG_MAX_DEPTH) {
            cfg__diag_add(b->db, mark_line(m), mark_column(m), "nesting is deeper than %d levels",
                          CFG_MAX_DEPTH);
            return SL_EINVAL;
        }
        n = node_new(ev->type == YAML_MAPPING_START_EVENT ? CFG__MAPPING : CFG__SEQUENCE, m);
        if (attach(b, n) != SL_OK) {
            return SL_EINVAL;
        }
        b->stack[b->depth++] = (struct frame){.container = n};
        return SL_OK;
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
        SL_ASSERT(b->depth > 0);
        n = b->stack[--b->depth].container;
        if (n->kind == CFG__MAPPING) {
            drop_duplicate_keys(n, b->db);
        }
        return SL_OK;
    default: /* stream start/end, document end: nothing to build */
        return SL_OK;
    }
}

int cfg__yaml_parse(const char *text, size_t len, struct cfg__node **root, struct cfg__diagbuf *db)
{
    struct builder *b = sl_xcalloc(1, sizeof(*b));
    b->db = db;
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        cfg__diag_add(db, 0, 0, "cannot initialise the yaml parser");
        free(b);
        return SL_ENOMEM;
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);

    bool ok = true;
    for (;;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            report_parser_error(&parser, text, len, db);
            ok = false;
            break;
        }
        int rc = on_event(b, &ev);
        bool end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
        if (rc != SL_OK) {
            ok = false;
            break;
        }
        if (end) {
            break;
        }
    }
    yaml_parser_delete(&parser);

    /* A key still waiting for its value is attached to nothing. */
    for (size_t i = 0; i < b->depth; i++) {
        cfg__node_free(b->stack[i].key);
    }
    if (!ok) {
        cfg__node_free(b->root);
        free(b);
        return SL_EINVAL;
    }
    *root = b->root;
    free(b);
    return SL_OK;
}
