/*
 * cfg_int.h -- internals shared by the config module's files: the raw YAML
 * tree with 1-based line:column marks (cfg_yaml.c), the diagnostic
 * collector (cfg_diag.c), validation into a snapshot (cfg_validate.c), the
 * limits and name helpers (cfg_limits.c) and the snapshot's private
 * access-key index (cfg_snapshot.c).
 *
 * Threading: everything here runs on the thread that loads a file; nothing
 * is shared. Ownership: a tree belongs to whoever got it from
 * cfg__yaml_parse() and is freed with cfg__node_free(); a diag collector's
 * items move into a struct cfg_diags with cfg__diagbuf_finish().
 */
#ifndef SLUICE_CFG_INT_H
#define SLUICE_CFG_INT_H

#include "cfg.h"

#include <stdarg.h>

/* Files and texts larger than this are refused: a configuration is small,
 * and the bound keeps a hostile input from costing unbounded memory. */
#define CFG_MAX_INPUT_BYTES ((size_t)1024 * 1024)
/* Deeper nesting than this is refused; sluice's schema needs 6 levels
 * (tenants.NAME.limits.queues.QUEUE.burst). */
#define CFG_MAX_DEPTH 32

/* ---- diagnostics -------------------------------------------------------- */

struct cfg__diagbuf {
    const char *name; /* file name put in front of every message */
    struct cfg_diag *items;
    size_t count;
    size_t cap;
};

void cfg__diagbuf_init(struct cfg__diagbuf *db, const char *name);
/* Adds "NAME:LINE:COLUMN: message" (or "NAME: message" when line is 0). */
void cfg__diag_add(struct cfg__diagbuf *db, uint32_t line, uint32_t column, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Sorts into file order and hands the items to out (which it overwrites). */
void cfg__diagbuf_finish(struct cfg__diagbuf *db, struct cfg_diags *out);
void cfg__diagbuf_fini(struct cfg__diagbuf *db);

/* ---- the raw tree ------------------------------------------------------- */

enum cfg__node_kind { CFG__SCALAR, CFG__MAPPING, CFG__SEQUENCE };

struct cfg__pair;

struct cfg__node {
    enum cfg__node_kind kind;
    uint32_t line;   /* 1-based */
    uint32_t column; /* 1-based */
    /* scalars: the text (NUL-terminated; may hold NULs, see len) */
    char *value;
    size_t len;
    bool plain; /* unquoted, so it may be a number, a bool or null */
    /* mappings: pairs in file order, duplicates already dropped */
    struct cfg__pair *pairs;
    /* sequences */
    struct cfg__node **items;
    size_t count; /* pairs or items */
};

struct cfg__pair {
    struct cfg__node *key; /* always a scalar */
    struct cfg__node *value;
};

/* Parses text into *root. Returns SL_OK with *root set (NULL for a stream
 * holding no document), or SL_EINVAL after adding the problems to db:
 * syntax errors, several documents, aliases, non-scalar or duplicate keys,
 * too deep nesting. Duplicate keys do not stop the parse: they are reported
 * and the later pair is dropped, and *root is still set. */
int cfg__yaml_parse(const char *text, size_t len, struct cfg__node **root, struct cfg__diagbuf *db);
void cfg__node_free(struct cfg__node *n);
/* True for an unquoted "", "~", "null", "Null" or "NULL". */
bool cfg__node_is_null(const struct cfg__node *n);

/* ---- validation --------------------------------------------------------- */

/* Turns a parsed tree into a snapshot, reporting every problem into db.
 * base_dir resolves relative TLS file paths (NULL: relative to the cwd).
 * Returns the snapshot (one reference) or NULL when db got any problem. */
struct cfg_snapshot *cfg__validate(const struct cfg__node *root, const char *source,
                                   const char *base_dir, struct cfg__diagbuf *db);

/* ---- limits and names (cfg_limits.c) ------------------------------------ */

/* memcmp order, shorter first on a common prefix (strcmp's order for
 * strings): any total order will do, as long as building and searching
 * agree. */
int cfg__cmp_bytes(const char *a, size_t alen, const char *b, size_t blen);

/* True when every one of the len bytes is one of A-Z a-z 0-9 _ - (the
 * characters of tenant and queue names). */
bool cfg__name_chars_valid(const char *name, size_t len);
/* True for an SQS queue name: 1..80 of A-Z a-z 0-9 _ -, or such a name
 * followed by ".fifo" (80 in all). */
bool cfg__queue_name_valid(const char *name, size_t len);

/* Frees what limits owns (the per-queue limits) and leaves none. */
void cfg__limits_fini(struct cfg_limits *limits);
/* Makes limits own a copy of the per-queue limits it points at (after a
 * struct copy that shares them). */
void cfg__limits_own(struct cfg_limits *limits);

/* ---- snapshot internals (cfg_snapshot.c) -------------------------------- */

/* One entry of the sorted access-key index behind cfg_find_principal. */
struct cfg__principal_entry {
    const char *access_key_id; /* borrowed from the tenant or the admin */
    size_t len;
    const struct cfg_tenant *tenant; /* NULL for the admin */
};

/* Builds s->_principals from the tenants and the admin (s must be final). */
void cfg__snapshot_index(struct cfg_snapshot *s);
/* Frees a snapshot regardless of its reference count (also half-built). */
void cfg__snapshot_free(struct cfg_snapshot *s);

#endif
