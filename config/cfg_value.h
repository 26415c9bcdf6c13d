/*
 * cfg_value.h -- (config-internal) typed values out of the YAML tree, each
 * problem reported at its node (cfg_value.c): integers and numbers in
 * ranges, booleans, strings, enums, endpoints, memory budgets, files,
 * secrets and access key ids, and the quoting that puts user text into
 * messages safely. cfg_validate.c and cfg_cluster.c walk the sections with
 * them.
 *
 * Threading: the loading thread only.
 */
#ifndef SLUICE_CFG_VALUE_H
#define SLUICE_CFG_VALUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cfg_int.h"

/* ---- the walk's state ------------------------------------------------------ */

struct key_use { /* one access key id, for the duplicate check */
    const char *id;
    const struct cfg__node *node;
    char *owner; /* "tenant \"acme\"" or "admin" */
};

struct vctx {
    struct cfg__diagbuf *db;
    const char *base_dir;
    struct cfg_snapshot *s;
    struct key_use *keys;
    size_t key_count;
};

#define REPORT(v, node, ...) cfg__diag_add((v)->db, (node)->line, (node)->column, __VA_ARGS__)

/* ---- values ---------------------------------------------------------------- */

/* Bytes of user text a message quotes before it cuts with "...". */
#define QUOTE_MAX 64

/* User text for a message: escaped and cut, so a hostile file cannot forge
 * log lines; from a small per-thread ring, so one message may quote a few. */
const char *cfg__quote(const char *p, size_t n);

/* cfg__quote of a node's text. */
const char *cfg__qnode(const struct cfg__node *n);

/* What a value is, for "X must be Y, not Z". */
const char *cfg__describe(const struct cfg__node *n);

/* True when the key node's text is exactly name. */
bool cfg__key_is(const struct cfg__node *k, const char *name);

/* SL_OK when val is a mapping, else SL_EINVAL (reported). */
int cfg__want_mapping(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val);

/* True for an unquoted, non-null scalar (numbers and booleans must be). */
bool cfg__plain_scalar(const struct cfg__node *n);

/* An integer in min..max: SL_OK, or SL_EINVAL (reported). */
int cfg__get_uint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  uint64_t min, uint64_t max, uint64_t *out);

/* cfg__get_uint into a uint32_t, left unchanged on a problem. */
void cfg__set_u32(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  uint32_t min, uint32_t max, uint32_t *out);

/* A decimal number: digits, sign, point, exponent; no hex, inf or nan.
 * SL_OK, or SL_EINVAL (reported). */
int cfg__get_number(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                    double *out);

/* true or false, in YAML 1.2's spellings (True, TRUE, ...). */
void cfg__set_bool(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                   bool *out);

/* Any non-empty scalar without NUL bytes; returns a borrowed pointer. */
const char *cfg__get_string(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val);

/* Frees *dst and stores a copy of src. */
void cfg__replace_str(char **dst, const char *src);

/* True when s holds only A-Z a-z 0-9 and the characters of extra. */
bool cfg__chars_in(const char *s, const char *extra);

/* One of two words: *second tells which. SL_OK, or SL_EINVAL (reported). */
int cfg__get_enum(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                  const char *a, const char *b, bool *second);

/* "host:port" or "[ipv6]:port"; a host name is letters, digits, '.', '-'. */
void cfg__set_endpoint(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                       struct cfg_endpoint *out);

/* A memory budget in bytes: 0 (derived from physical memory by whoever
 * uses it), or min..max. Left unchanged on a problem (reported). */
void cfg__set_budget(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                     uint64_t min, uint64_t max, uint64_t *out);

/* e as the file spells it, "127.0.0.1:9324" or "[::1]:9324", into out
 * (300 bytes hold any); returns out. */
const char *cfg__endpoint_str(const struct cfg_endpoint *e, char *out, size_t cap);

/* Opens the file that val names (relative to v->base_dir unless absolute),
 * which must be a regular file. Returns the descriptor, which the caller
 * closes, and sets *path_out to the resolved path, which the caller frees;
 * or returns -1 after reporting "cannot read KEY PATH (reason)". */
int cfg__open_file(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                   char **path_out);

/* A secret, read from the environment when written "env:NAME". */
void cfg__set_secret(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                     char **out);

/* An access key id: at most 128 of A-Z a-z 0-9 _ . + @ - (no '/' or ',',
 * which SigV4's Credential splits on). */
void cfg__set_access_key_id(struct vctx *v, const struct cfg__node *k, const struct cfg__node *val,
                            char **out);

/* Records where an access key id is used, for cfg__check_key_reuse; takes
 * ownership of owner (a description like "tenant \"acme\""). */
void cfg__note_key_use(struct vctx *v, const char *id, const struct cfg__node *node, char *owner);

/* Every access key id names one principal: report each reuse at the later
 * place in the file, naming the first owner. */
void cfg__check_key_reuse(struct vctx *v);

#endif
