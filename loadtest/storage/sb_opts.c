/*
 * sb_opts.c -- the command line of build/sluice-storage-bench.
 * Single-threaded (main() only).
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sb_int.h"

static const char USAGE[] =
    "usage: sluice-storage-bench [options]\n"
    "  --partitions LIST   P values, comma separated (default 1,4,16)\n"
    "  --durability LIST   fsync,os (default both)\n"
    "  --scenarios LIST    send,receive,delete,cycle (default all)\n"
    "  --batch N           messages per send job, 1..10 (default 10)\n"
    "  --count N           messages per phase, at most (default 200000)\n"
    "  --seconds S         seconds per phase, at most (default 10)\n"
    "  --body N            body bytes (default 1024)\n"
    "  --inflight N        jobs outstanding (default 256)\n"
    "  --loops N           client loops, 1..2 (default 1)\n"
    "  --no-ceiling        skip the raw SQLite ceiling\n"
    "  --ceiling-only      only the raw SQLite ceiling, its transactions sized by\n"
    "                      --jobs-per-commit X (measured elsewhere, e.g. a gateway's)\n"
    "  --cycle-send-batch N  with --ceiling-only: messages per send job of the cycle (10)\n"
    "  --cycle-take X      with --ceiling-only: mean messages per receive job of the\n"
    "                      cycle, and per delete job (10)\n"
    "  --page-size N       with --ceiling-only: the files' page size (512..65536)\n"
    "  --memory N          instead: resident memory with N ready messages\n"
    "  --memory-partitions P (default 1)   --memory-body N (default 16)\n"
    "  --tmpdir DIR        parent of the fresh data dirs (default $TMPDIR or /tmp)\n"
    "  --json FILE         write the JSON record\n"
    "  --markdown FILE     write the markdown table rows\n";

static bool parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || v < lo || v > hi) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_double(const char *s, double lo, double hi, double *out)
{
    char *end = NULL;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || !(v >= lo && v <= hi)) {
        return false;
    }
    *out = v;
    return true;
}

static bool parse_list(const char *arg, bool (*item)(const char *, void *), void *ctx)
{
    char *copy = sl_xstrdup(arg), *save = NULL;
    bool ok = true;
    for (char *t = strtok_r(copy, ",", &save); t != NULL && ok; t = strtok_r(NULL, ",", &save)) {
        ok = item(t, ctx);
    }
    free(copy);
    return ok;
}

static bool item_partitions(const char *t, void *ctx)
{
    struct sb_opts *o = ctx;
    uint64_t v = 0;
    if (o->npartitions == SL_ARRAY_LEN(o->partitions) || !parse_u64(t, 1, 256, &v)) {
        return false;
    }
    o->partitions[o->npartitions++] = (uint32_t)v;
    return true;
}

static bool item_durability(const char *t, void *ctx)
{
    struct sb_opts *o = ctx;
    if (o->ndurability == SL_ARRAY_LEN(o->durability)) {
        return false;
    }
    if (strcmp(t, "fsync") == 0) {
        o->durability[o->ndurability++] = PART_DURABILITY_FSYNC;
    } else if (strcmp(t, "os") == 0) {
        o->durability[o->ndurability++] = PART_DURABILITY_OS;
    } else {
        return false;
    }
    return true;
}

static bool item_scenario(const char *t, void *ctx)
{
    struct sb_opts *o = ctx;
    for (int ph = 0; ph < SB_PHASES_; ph++) {
        if (strcmp(t, sb_phase_name((enum sb_phase)ph)) == 0) {
            o->want[ph] = true;
            return true;
        }
    }
    return false;
}

int sb_opts_parse(int argc, char **argv, struct sb_opts *o)
{
    *o = (struct sb_opts){
        .batch = PART_MAX_BATCH,
        .count = 200000,
        .seconds = 10,
        .body_size = 1024,
        .inflight = 256,
        .loops = 1,
        .ceiling = true,
        .cycle_send_batch = PART_MAX_BATCH,
        .cycle_take = PART_MAX_BATCH,
        .memory_partitions = 1,
        .memory_body = 16,
        .tmpdir = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp",
    };
    bool any_part = false, any_dur = false, any_scen = false;
    enum {
        O_NO_CEILING = 256,
        O_MEM_PARTS,
        O_MEM_BODY,
        O_CEILING_ONLY,
        O_JOBS_PER_COMMIT,
        O_CYCLE_SEND,
        O_CYCLE_TAKE,
        O_PAGE_SIZE
    };
    static const struct option longs[] = {
        {"partitions", required_argument, NULL, 'p'},
        {"durability", required_argument, NULL, 'd'},
        {"scenarios", required_argument, NULL, 's'},
        {"batch", required_argument, NULL, 'b'},
        {"count", required_argument, NULL, 'n'},
        {"seconds", required_argument, NULL, 't'},
        {"body", required_argument, NULL, 'B'},
        {"inflight", required_argument, NULL, 'i'},
        {"loops", required_argument, NULL, 'l'},
        {"no-ceiling", no_argument, NULL, O_NO_CEILING},
        {"ceiling-only", no_argument, NULL, O_CEILING_ONLY},
        {"jobs-per-commit", required_argument, NULL, O_JOBS_PER_COMMIT},
        {"cycle-send-batch", required_argument, NULL, O_CYCLE_SEND},
        {"cycle-take", required_argument, NULL, O_CYCLE_TAKE},
        {"page-size", required_argument, NULL, O_PAGE_SIZE},
        {"memory", required_argument, NULL, 'm'},
        {"memory-partitions", required_argument, NULL, O_MEM_PARTS},
        {"memory-body", required_argument, NULL, O_MEM_BODY},
        {"tmpdir", required_argument, NULL, 'T'},
        {"json", required_argument, NULL, 'j'},
        {"markdown", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    uint64_t v = 0;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        bool ok = true;
        switch (c) {
        case 'p':
            ok = !any_part && parse_list(optarg, item_partitions, o);
            any_part = true;
            break;
        case 'd':
            ok = !any_dur && parse_list(optarg, item_durability, o);
            any_dur = true;
            break;
        case 's':
            ok = !any_scen && parse_list(optarg, item_scenario, o);
            any_scen = true;
            break;
        case 'b':
            ok = parse_u64(optarg, 1, PART_MAX_BATCH, &v);
            o->batch = (uint32_t)v;
            break;
        case 'n':
            ok = parse_u64(optarg, 1, UINT32_MAX, &v);
            o->count = v;
            break;
        case 't': {
            char *end = NULL;
            o->seconds = strtod(optarg, &end);
            ok = end != optarg && *end == '\0' && o->seconds > 0 && o->seconds <= 3600;
            break;
        }
        case 'B':
            ok = parse_u64(optarg, 1, 1 << 20, &v);
            o->body_size = (uint32_t)v;
            break;
        case 'i':
            ok = parse_u64(optarg, 1, 100000, &v);
            o->inflight = (uint32_t)v;
            break;
        case 'l':
            ok = parse_u64(optarg, 1, 2, &v);
            o->loops = (uint32_t)v;
            break;
        case O_NO_CEILING:
            o->ceiling = false;
            break;
        case O_CEILING_ONLY:
            o->ceiling_only = true;
            break;
        case O_JOBS_PER_COMMIT:
            ok = parse_double(optarg, 0.01, 100000, &o->jobs_per_commit);
            break;
        case O_CYCLE_SEND:
            ok = parse_u64(optarg, 1, PART_MAX_BATCH, &v);
            o->cycle_send_batch = (uint32_t)v;
            break;
        case O_CYCLE_TAKE:
            ok = parse_double(optarg, 1, PART_MAX_BATCH, &o->cycle_take);
            break;
        case O_PAGE_SIZE:
            ok = parse_u64(optarg, 512, 65536, &v) && (v & (v - 1)) == 0;
            o->page_size = (uint32_t)v;
            break;
        case 'm':
            ok = parse_u64(optarg, 2, 100000000, &v);
            o->memory = v;
            break;
        case O_MEM_PARTS:
            ok = parse_u64(optarg, 1, 256, &v);
            o->memory_partitions = (uint32_t)v;
            break;
        case O_MEM_BODY:
            ok = parse_u64(optarg, 1, 1 << 20, &v);
            o->memory_body = (uint32_t)v;
            break;
        case 'T':
            o->tmpdir = optarg;
            break;
        case 'j':
            o->json_path = optarg;
            break;
        case 'M':
            o->markdown_path = optarg;
            break;
        default:
            fputs(USAGE, stderr);
            return SL_EINVAL;
        }
        if (!ok) {
            fprintf(stderr, "sluice-storage-bench: bad value: %s\n%s", optarg ? optarg : "", USAGE);
            return SL_EINVAL;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "sluice-storage-bench: unexpected argument %s\n%s", argv[optind], USAGE);
        return SL_EINVAL;
    }
    /* The engine's cycle driver sends, receives and deletes in tens; a
     * ceiling of other batches would not be its ceiling. */
    bool cycle_custom = o->cycle_send_batch != PART_MAX_BATCH || o->cycle_take != PART_MAX_BATCH ||
                        o->page_size != 0;
    if ((o->ceiling_only != (o->jobs_per_commit > 0)) || (cycle_custom && !o->ceiling_only) ||
        (o->ceiling_only && (!o->ceiling || o->memory > 0))) {
        fprintf(stderr,
                "sluice-storage-bench: --ceiling-only goes with --jobs-per-commit (and "
                "only it with --cycle-* and --page-size), without --no-ceiling or --memory\n");
        return SL_EINVAL;
    }
    if (!any_part) {
        static const uint32_t dflt[] = {1, 4, 16};
        memcpy(o->partitions, dflt, sizeof dflt);
        o->npartitions = SL_ARRAY_LEN(dflt);
    }
    if (!any_dur) {
        o->durability[0] = PART_DURABILITY_FSYNC;
        o->durability[1] = PART_DURABILITY_OS;
        o->ndurability = 2;
    }
    if (!any_scen) {
        for (int ph = 0; ph < SB_PHASES_; ph++) {
            o->want[ph] = true;
        }
    }
    return SL_OK;
}
