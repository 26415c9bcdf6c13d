/*
 * sb_report.c -- the storage bench's outputs: a JSON record (jansson) with
 * the machine, the options, every cell (engine, ceiling, ratio) and the
 * memory probe; markdown table rows for docs/benchmarks.md; a text summary
 * on stdout. main() only.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <jansson.h>

#include "sb_int.h"

#define GOAL_RATIO 0.7
#define GOAL_CYCLE_P16_FSYNC 50000.0
#define GOAL_BYTES_PER_READY 100.0

static const char *dur_name(enum part_durability d)
{
    return d == PART_DURABILITY_FSYNC ? "fsync" : "os";
}

static void cpu_model(char *out, size_t cap)
{
    snprintf(out, cap, "unknown");
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f == NULL) {
        return;
    }
    char line[512];
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "model name", 10) == 0) {
            const char *v = strchr(line, ':');
            if (v != NULL) {
                v++;
                v += strspn(v, " \t");
                snprintf(out, cap, "%.*s", (int)strcspn(v, "\n"), v);
            }
            break;
        }
    }
    fclose(f);
}

/* File system type and device of the mount holding dir (longest prefix
 * match in /proc/mounts). */
static void disk_fs(const char *dir, char *fs, size_t fscap, char *dev, size_t devcap)
{
    snprintf(fs, fscap, "unknown");
    snprintf(dev, devcap, "unknown");
    char real[PATH_MAX];
    if (realpath(dir, real) == NULL) {
        return;
    }
    FILE *f = fopen("/proc/mounts", "r");
    if (f == NULL) {
        return;
    }
    char d[512], mnt[1024], type[64];
    size_t best = 0;
    while (fscanf(f, "%511s %1023s %63s %*[^\n]", d, mnt, type) == 3) {
        size_t n = strlen(mnt);
        bool under = strncmp(real, mnt, n) == 0 &&
                     (real[n] == '/' || real[n] == '\0' || strcmp(mnt, "/") == 0);
        if (under && n >= best) {
            best = n;
            snprintf(fs, fscap, "%s", type);
            snprintf(dev, devcap, "%s", d);
        }
    }
    fclose(f);
}

static json_t *machine_json(const struct sb_opts *o)
{
    char cpu[256], fs[64], dev[512];
    cpu_model(cpu, sizeof cpu);
    disk_fs(o->tmpdir, fs, sizeof fs, dev, sizeof dev);
    struct utsname u;
    const char *kernel = uname(&u) == 0 ? u.release : "unknown";
    return json_pack("{s:I, s:s, s:s, s:s, s:s, s:s}", "nproc",
                     (json_int_t)sysconf(_SC_NPROCESSORS_ONLN), "cpu", cpu, "kernel", kernel, "fs",
                     fs, "device", dev, "tmpdir", o->tmpdir);
}

static double mean_ms(uint64_t us, uint64_t n)
{
    return n > 0 ? (double)us / (double)n / 1000.0 : 0.0;
}

static double per_msg(double v, uint64_t n)
{
    return n > 0 ? v / (double)n : 0.0;
}

static json_t *measure_json(const struct sb_measure *m)
{
    json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:f, s:f}", "messages",
                          (json_int_t)m->messages, "jobs", (json_int_t)m->jobs, "commits",
                          (json_int_t)m->commits, "errors", (json_int_t)m->errors, "seconds",
                          m->seconds, "msgs_per_s", sb_rate(m), "jobs_per_commit", m->per_commit,
                          "commit_ms_mean", mean_ms(m->commit_us, m->commits), "batch_ms_mean",
                          mean_ms(m->batch_us, m->commits));
    json_object_set_new(j, "cpu_s", json_real(m->cpu_s));
    json_object_set_new(j, "cpu_us_per_message", json_real(per_msg(m->cpu_s * 1e6, m->messages)));
    json_object_set_new(j, "commits_per_message",
                        json_real(per_msg((double)m->commits, m->messages)));
    if (m->write_bytes >= 0) {
        json_object_set_new(j, "write_bytes", json_integer((json_int_t)m->write_bytes));
        json_object_set_new(j, "write_bytes_per_message",
                            json_real(per_msg((double)m->write_bytes, m->messages)));
    }
    return j;
}

static double ratio_of(const struct sb_cell *c, int ph)
{
    double ceil = sb_rate(&c->ceiling[ph]);
    return c->ceiling[ph].ran && ceil > 0 ? sb_rate(&c->engine[ph]) / ceil : -1.0;
}

/* engine / the cycle's single-transaction bound (sb_raw.c), or -1 */
static double single_ratio_of(const struct sb_cell *c)
{
    double bound = sb_rate(&c->ceiling_single_txn);
    return c->ceiling_single_txn.ran && bound > 0 ? sb_rate(&c->engine[SB_CYCLE]) / bound : -1.0;
}

static double bytes_per_msg(int64_t a, int64_t b, uint64_t n)
{
    return n > 0 ? (double)(b - a) / (double)n : 0.0;
}

int sb_report_json(const struct sb_run *run, const char *path)
{
    const struct sb_opts *o = &run->opt;
    json_t *root = json_object();
    json_object_set_new(root, "tool", json_string("sluice-storage-bench"));
    json_object_set_new(root, "started_ms", json_integer((json_int_t)run->started_ms));
    json_object_set_new(root, "command", json_string(o->command ? o->command : ""));
    json_object_set_new(root, "machine", machine_json(o));
    json_t *opts = json_pack("{s:I, s:I, s:f, s:I, s:I, s:I, s:b}", "batch", (json_int_t)o->batch,
                             "count", (json_int_t)o->count, "seconds", o->seconds, "body_size",
                             (json_int_t)o->body_size, "inflight", (json_int_t)o->inflight, "loops",
                             (json_int_t)o->loops, "ceiling", o->ceiling);
    json_object_set_new(opts, "ceiling_only", json_boolean(o->ceiling_only));
    json_object_set_new(opts, "jobs_per_commit", json_real(o->jobs_per_commit));
    json_object_set_new(opts, "cycle_send_batch", json_integer((json_int_t)o->cycle_send_batch));
    json_object_set_new(opts, "cycle_take", json_real(o->cycle_take));
    json_object_set_new(opts, "page_size", json_integer((json_int_t)o->page_size));
    json_object_set_new(root, "options", opts);
    json_t *cells = json_array();
    for (size_t i = 0; i < run->ncells; i++) {
        const struct sb_cell *c = &run->cells[i];
        for (int ph = 0; ph < SB_PHASES_; ph++) {
            if (!o->want[ph] || !(c->engine[ph].ran || c->ceiling[ph].ran)) {
                continue;
            }
            json_t *cell = json_pack(
                "{s:I, s:s, s:s, s:I}", "partitions", (json_int_t)c->partitions, "durability",
                dur_name(c->durability), "scenario", sb_phase_name((enum sb_phase)ph), "batch",
                (json_int_t)(ph == SB_SEND ? o->batch : PART_MAX_BATCH));
            if (c->engine[ph].ran) {
                json_object_set_new(cell, "engine", measure_json(&c->engine[ph]));
            }
            if (c->ceiling[ph].ran) {
                json_object_set_new(cell, "ceiling", measure_json(&c->ceiling[ph]));
            }
            if (c->ceiling[ph].ran && c->engine[ph].ran) {
                json_object_set_new(cell, "ratio", json_real(ratio_of(c, ph)));
            }
            if (ph == SB_CYCLE && c->ceiling_single_txn.ran) {
                json_object_set_new(cell, "single_txn_bound", measure_json(&c->ceiling_single_txn));
                json_object_set_new(cell, "ratio_single_txn", json_real(single_ratio_of(c)));
            }
            json_array_append_new(cells, cell);
        }
    }
    json_object_set_new(root, "cells", cells);
    if (run->has_memory) {
        const struct sb_memory *m = &run->memory;
        double per = bytes_per_msg(m->rss_base, m->rss_full, m->messages);
        json_object_set_new(
            root, "memory",
            json_pack("{s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:b}",
                      "messages", (json_int_t)m->messages, "partitions", (json_int_t)m->partitions,
                      "body_size", (json_int_t)m->body_size, "load_seconds", m->load_seconds,
                      "rss_base", (json_int_t)m->rss_base, "rss_half", (json_int_t)m->rss_half,
                      "rss_full", (json_int_t)m->rss_full, "sqlite_base",
                      (json_int_t)m->sqlite_base, "sqlite_half", (json_int_t)m->sqlite_half,
                      "sqlite_full", (json_int_t)m->sqlite_full, "bytes_per_message", per,
                      "bytes_per_message_second_half",
                      bytes_per_msg(m->rss_half, m->rss_full, m->messages - m->messages / 2),
                      "sqlite_bytes_per_message",
                      bytes_per_msg(m->sqlite_base, m->sqlite_full, m->messages), "goal_met",
                      per < GOAL_BYTES_PER_READY));
    }
    int rc = json_dump_file(root, path, JSON_INDENT(2) | JSON_SORT_KEYS);
    json_decref(root);
    if (rc != 0) {
        fprintf(stderr, "sluice-storage-bench: cannot write %s\n", path);
        return SL_EIO;
    }
    return SL_OK;
}

static void fmt_rate(char *out, size_t cap, double r)
{
    snprintf(out, cap, "%.0f", r);
}

int sb_report_markdown(const struct sb_run *run, const char *path)
{
    const struct sb_opts *o = &run->opt;
    FILE *f = fopen(path, "w");
    if (f == NULL) {
        fprintf(stderr, "sluice-storage-bench: cannot write %s\n", path);
        return SL_EIO;
    }
    if (run->ncells > 0) {
        fprintf(f, "| P | durability | scenario | engine msg/s | ceiling msg/s | ratio | "
                   "engine jobs/commit | engine COMMIT ms | goal | single-txn bound msg/s "
                   "(ratio) |\n");
        fprintf(f, "|---:|---|---|---:|---:|---:|---:|---:|---|---:|\n");
    }
    for (size_t i = 0; i < run->ncells; i++) {
        const struct sb_cell *c = &run->cells[i];
        for (int ph = 0; ph < SB_PHASES_; ph++) {
            if (!o->want[ph] || !c->engine[ph].ran) {
                continue;
            }
            char scen[48], eng[32], ceil[32] = "-", ratio[32] = "-";
            if (ph == SB_SEND) {
                snprintf(scen, sizeof scen, "send (batch %u)", o->batch);
            } else {
                snprintf(scen, sizeof scen, "%s", sb_phase_name((enum sb_phase)ph));
            }
            fmt_rate(eng, sizeof eng, sb_rate(&c->engine[ph]));
            double r = ratio_of(c, ph);
            const char *goal = "-";
            if (c->ceiling[ph].ran) {
                fmt_rate(ceil, sizeof ceil, sb_rate(&c->ceiling[ph]));
                snprintf(ratio, sizeof ratio, "%.2f", r);
                goal = r >= GOAL_RATIO ? "met" : "**missed**";
            }
            bool headline =
                ph == SB_CYCLE && c->partitions == 16 && c->durability == PART_DURABILITY_FSYNC;
            char goalbuf[96];
            if (headline) {
                snprintf(goalbuf, sizeof goalbuf, "%s; 50k/s: %s", goal,
                         sb_rate(&c->engine[ph]) >= GOAL_CYCLE_P16_FSYNC ? "met" : "**missed**");
                goal = goalbuf;
            }
            char single[48] = "-";
            if (ph == SB_CYCLE && c->ceiling_single_txn.ran) {
                snprintf(single, sizeof single, "%.0f (%.2f)", sb_rate(&c->ceiling_single_txn),
                         single_ratio_of(c));
            }
            fprintf(f, "| %u | %s | %s | %s | %s | %s | %.1f | %.2f | %s | %s |\n", c->partitions,
                    dur_name(c->durability), scen, eng, ceil, ratio, c->engine[ph].per_commit,
                    mean_ms(c->engine[ph].commit_us, c->engine[ph].commits), goal, single);
        }
    }
    if (run->has_memory) {
        const struct sb_memory *m = &run->memory;
        double per = bytes_per_msg(m->rss_base, m->rss_full, m->messages);
        fprintf(f, "| ready messages | P | body | RSS base | RSS after | bytes/message | "
                   "bytes/message (2nd half) | of which SQLite heap | goal (< 100) |\n");
        fprintf(f, "|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
        fprintf(f, "| %llu | %u | %u B | %.1f MiB | %.1f MiB | %.1f | %.1f | %.1f | %s |\n",
                (unsigned long long)m->messages, m->partitions, m->body_size,
                (double)m->rss_base / 1048576.0, (double)m->rss_full / 1048576.0, per,
                bytes_per_msg(m->rss_half, m->rss_full, m->messages - m->messages / 2),
                bytes_per_msg(m->sqlite_base, m->sqlite_full, m->messages),
                per < GOAL_BYTES_PER_READY ? "met" : "**missed**");
    }
    fclose(f);
    return SL_OK;
}

void sb_report_text(const struct sb_run *run)
{
    const struct sb_opts *o = &run->opt;
    for (size_t i = 0; i < run->ncells; i++) {
        const struct sb_cell *c = &run->cells[i];
        for (int ph = 0; ph < SB_PHASES_; ph++) {
            if (!o->want[ph] || !(c->engine[ph].ran || c->ceiling[ph].ran)) {
                continue;
            }
            const struct sb_measure *e = &c->engine[ph], *r = &c->ceiling[ph];
            if (!e->ran) {
                printf("P=%-2u %-5s %-7s ceiling %9.0f msg/s (%llu in %.2fs, %.2f jobs/commit, "
                       "%.3f commits/message): %.1f us CPU and %.0f bytes written per message\n",
                       c->partitions, dur_name(c->durability), sb_phase_name((enum sb_phase)ph),
                       sb_rate(r), (unsigned long long)r->messages, r->seconds, r->per_commit,
                       per_msg((double)r->commits, r->messages),
                       per_msg(r->cpu_s * 1e6, r->messages),
                       per_msg((double)r->write_bytes, r->messages));
                continue;
            }
            printf("P=%-2u %-5s %-7s engine %9.0f msg/s (%llu in %.2fs, %.1f jobs/commit, COMMIT "
                   "%.2f ms)",
                   c->partitions, dur_name(c->durability), sb_phase_name((enum sb_phase)ph),
                   sb_rate(e), (unsigned long long)e->messages, e->seconds, e->per_commit,
                   mean_ms(e->commit_us, e->commits));
            if (r->ran) {
                printf("  ceiling %9.0f msg/s  ratio %.2f", sb_rate(r), ratio_of(c, ph));
            }
            if (ph == SB_CYCLE && c->ceiling_single_txn.ran) {
                printf("  (single-txn bound %.0f msg/s, ratio %.2f)",
                       sb_rate(&c->ceiling_single_txn), single_ratio_of(c));
            }
            printf("\n");
        }
    }
    if (run->has_memory) {
        const struct sb_memory *m = &run->memory;
        printf("memory: %llu ready messages on P=%u: RSS %.1f -> %.1f MiB, %.1f bytes/message "
               "(second half %.1f; SQLite heap %.1f)\n",
               (unsigned long long)m->messages, m->partitions, (double)m->rss_base / 1048576.0,
               (double)m->rss_full / 1048576.0,
               bytes_per_msg(m->rss_base, m->rss_full, m->messages),
               bytes_per_msg(m->rss_half, m->rss_full, m->messages - m->messages / 2),
               bytes_per_msg(m->sqlite_base, m->sqlite_full, m->messages));
    }
    fflush(stdout);
}
