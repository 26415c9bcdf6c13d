/*
 * sb_util.c -- small helpers of the storage bench: phase names, rates,
 * VmRSS from /proc/self/status, fresh temp dirs and their removal.
 * Any thread; nothing here keeps state.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int64_t sb_rss_bytes(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (f == NULL) {
        return -1;
    }
    char line[256];
    int64_t kb = -1;
    while (fgets(line, sizeof line, f) != NULL) {
        if (strncmp(line, "VmRSS:", 6) == 0) {
            kb = strtoll(line + 6, NULL, 10);
            break;
        }
    }
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
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
