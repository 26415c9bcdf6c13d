/*
 * sb_util.c -- small helpers of the storage bench: phase names, rates,
 * VmRSS from /proc/self/status, the process's CPU and disk writes, fresh
 * temp dirs and their removal.
 * Any thread; nothing here keeps state.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "sb_int.h"

const char *sb_phase_name(enum sb_phase ph)
{
    static const char *const names[SB_PHASES_] = {"send", "receive", "delete", "cycle"};
    return ph < SB_PHASES_ ? names[ph] : "?";
}

double sb_rate(const struct sb_measure *m)
{
    return m->seconds > 0 ? (double)m->messages / m->seconds : 0.0;
}

/* The number after "key" on its line of a /proc file, or -1. */
static int64_t proc_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    size_t n = strlen(key);
    int64_t v = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, key, n) == 0) {
            v = strtoll(line + n, NULL, 10);
            break;
        }
    }
    fclose(f);
    return v;
}

int64_t sb_rss_bytes(void)
{
    int64_t kb = proc_field("/proc/self/status", "VmRSS:");
    return kb < 0 ? -1 : kb * 1024;
}

int64_t sb_write_bytes(void)
{
    return proc_field("/proc/self/io", "write_bytes:");
}

double sb_cpu_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) {
        return 0.0;
    }
    return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
           (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

char *sb_tempdir(const char *parent, const char *tag)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sluice-storage-%s-XXXXXX", parent, tag);
    if (mkdtemp(path) == NULL) {
        return NULL;
    }
    return sl_xstrdup(path);
}

void sb_rmdir(const char *dir)
{
    DIR *d = opendir(dir);
    if (d == NULL) {
        return;
    }
    struct dirent *de;
    char path[4096 + 256];
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) {
            continue;
        }
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        unlink(path);
    }
    closedir(d);
    rmdir(dir);
}
