/*
 * cfg_load.c -- the loading entry points: read the bytes, parse them into a
 * raw tree (cfg_yaml.c), validate the tree into a snapshot
 * (cfg_validate.c), and hand out either the snapshot or every problem.
 *
 * Threading: a load touches no shared state; several may run at once.
 * Ownership: on success the caller owns one reference to the snapshot; the
 * diagnostics always belong to the caller (empty on success).
 */
#include "cfg_int.h"

#include "sl.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load(const char *name, const char *text, size_t len, const char *base_dir,
                struct cfg_snapshot **out, struct cfg_diags *diags)
{
    struct cfg__diagbuf db;
    cfg__diagbuf_init(&db, name);
    struct cfg_snapshot *s = NULL;
    if (len > CFG_MAX_INPUT_BYTES) {
        cfg__diag_add(&db, 0, 0, "the configuration is larger than %zu bytes", CFG_MAX_INPUT_BYTES);
    } else {
        struct cfg__node *root = NULL;
        if (cfg__yaml_parse(text, len, &root, &db) == SL_OK) {
            s = cfg__validate(root, name, base_dir, &db);
            cfg__node_free(root);
        }
    }
    /* Duplicate keys are reported by the parser, which still builds a tree:
     * any problem at all refuses the snapshot. */
    if (db.count > 0) {
        cfg__snapshot_free(s);
        cfg__diagbuf_finish(&db, diags);
        return SL_EINVAL;
    }
    cfg__diagbuf_finish(&db, diags);
    *out = s;
    return SL_OK;
}

int cfg_load_string(const char *name, const char *text, size_t len, struct cfg_snapshot **out,
                    struct cfg_diags *diags)
{
    return load(name, text, len, NULL, out, diags);
}

int cfg_load_default(struct cfg_snapshot **out, struct cfg_diags *diags)
{
    const char *text = cfg_default_yaml();
    return load("<embedded default>", text, strlen(text), NULL, out, diags);
}

/* Reports a failed open or read into diags; returns the matching code. */
static int report_errno(const char *path, const char *what, int err, struct cfg_diags *diags)
{
    char reason[128];
    snprintf(reason, sizeof(reason), "%s", strerror(err));
    reason[0] = (char)tolower((unsigned char)reason[0]);
    struct cfg__diagbuf db;
    cfg__diagbuf_init(&db, path);
    cfg__diag_add(&db, 0, 0, "%s (%s)", what, reason);
    cfg__diagbuf_finish(&db, diags);
    return err == ENOENT ? SL_ENOTFOUND : SL_EIO;
}

int cfg_load_file(const char *path, struct cfg_snapshot **out, struct cfg_diags *diags)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        return report_errno(path, "cannot open the configuration", errno, diags);
    }
    /* One byte past the bound tells "too large" from "exactly at it". */
    size_t cap = CFG_MAX_INPUT_BYTES + 1;
    char *text = sl_xmalloc(cap);
    size_t len = fread(text, 1, cap, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    if (err != 0) {
        free(text);
        return report_errno(path, "cannot read the configuration", err, diags);
    }

    /* Relative TLS paths are relative to the file, not to the cwd. */
    char *base_dir = NULL;
    const char *slash = strrchr(path, '/');
    if (slash != NULL) {
        base_dir = slash == path ? sl_xstrdup("") : sl_xstrndup(path, (size_t)(slash - path));
    }
    int rc = load(path, text, len, base_dir, out, diags);
    free(base_dir);
    free(text);
    return rc;
}
