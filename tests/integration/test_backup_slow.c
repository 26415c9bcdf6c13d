/*
 * test_backup_slow.c -- sluicectl backup of a data directory that takes
 * longer to copy than sluicectl's fixed 30-second request timeout
 * (tools/ctl_client.c: CURLOPT_TIMEOUT_MS, no flag changes it).
 *
 * POST /api/backup answers when the copy is done (gw_admin_ops.c), and
 * docs/benchmarks.md measures about 1.5 to 2.5 s for 171 MB on this kind
 * of machine: from a few GB on, sluicectl prints "error: ConnectionError:
 * ... Timeout was reached" and exits 1 while the gateway goes on and
 * finishes the backup. The operator's retry then gets 409 (a backup is
 * running) or 400 (the directory is not empty). The backup must be
 * reported as it ends: waited for, or started and followed.
 *
 * The data is made big cheaply: with sluiced stopped, part-0000.db gets a
 * table of zero-filled blobs (SLUICE_PAD_MB), which VACUUM INTO copies
 * like any other pages. Needs that much free disk twice. The review ran
 * it with 4096 MB (about a minute); CI runs 256 MB, a backup of a few
 * seconds, which shows the same now that sluicectl starts the backup
 * and follows it instead of waiting on one request: no request lasts as
 * long as the copy, at any size.
 *
 * Then SIGTERM while a second such backup runs: the contract wants a
 * clean exit 0; the backup's thread-pool work keeps the admin loop's
 * uv_run alive, so the process waits for it and the 40-second shutdown
 * watchdog (gw_main.c) ends it with exit status 1, the backup directory
 * left without its manifest.json.
 *
 * Both failed in review5. The SIGTERM now lands while the copy runs (the
 * test waits for the copy's first bytes), and the stopped backup must
 * leave no directory behind that could pass for a backup.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include <sqlite3.h>

#include "it_sqs.h"

#define TOKEN "ops-token_1"

static const char tenants_yaml[] = IT_TENANTS_YAML_WITH_TOKEN(TOKEN);

static struct it_server srv;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int pad_partition(long mb)
{
    char path[400];
    snprintf(path, sizeof path, "%s/part-0000.db", srv.data_dir);
    sqlite3 *db = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK) {
        return -1;
    }
    char sql[512];
    snprintf(sql, sizeof sql,
             "PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF;"
             "CREATE TABLE review_pad(b BLOB);"
             "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x<%ld)"
             " INSERT INTO review_pad SELECT zeroblob(1048576) FROM c;",
             mb);
    char *err = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &err);
    if (rc != SQLITE_OK) {
        fprintf(stderr, "pad: %s\n", err ? err : "?");
    }
    sqlite3_free(err);
    sqlite3_close(db);
    return rc == SQLITE_OK ? 0 : -1;
}

int main(void)
{
    const char *pad = getenv("SLUICE_PAD_MB");
    long mb = pad != NULL ? atol(pad) : 256;
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    char *url = it_create_queue(&srv, "bk", NULL);
    IT_REQUIRE(url != NULL);
    free(it_send(&srv, url, "acknowledged before the backup"));
    free(url);
    IT_REQUIRE(it_server_stop(&srv) == 0);
    double t0 = now_s();
    IT_REQUIRE(pad_partition(mb) == 0);
    fprintf(stderr, "padded part-0000.db with %ld MB in %.1f s\n", mb, now_s() - t0);
    IT_REQUIRE(it_server_restart(&srv) == 0);

    char dir[400], cmd[2048], out[8192];
    snprintf(dir, sizeof dir, "%s/bk", srv.dir);
    const char *build = getenv("SLUICE_BUILD_DIR");
    snprintf(cmd, sizeof cmd,
             "env -i HOME='%s' SLUICE_ADMIN_ENDPOINT='%s' '%s/sluicectl' --admin-token " TOKEN
             " backup '%s' 2>&1",
             srv.dir, srv.admin_url, build ? build : ".", dir);
    t0 = now_s();
    FILE *p = popen(cmd, "r");
    IT_REQUIRE(p != NULL);
    size_t n = fread(out, 1, sizeof out - 1, p);
    out[n] = '\0';
    int st = pclose(p);
    int status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    double took = now_s() - t0;
    fprintf(stderr, "sluicectl backup: exit %d after %.1f s:\n%s\n", status, took, out);

    /* whatever sluicectl said, does the backup finish? */
    char manifest[512];
    snprintf(manifest, sizeof manifest, "%s/manifest.json", dir);
    struct stat sb;
    double t1 = now_s();
    while (stat(manifest, &sb) != 0 && now_s() - t1 < 300) {
        it_sleep_ms(500);
    }
    bool finished = stat(manifest, &sb) == 0;
    fprintf(stderr, "manifest.json %s %.1f s after sluicectl returned\n",
            finished ? "appeared" : "did not appear within 300 s", now_s() - t1);
    IT_CHECK(finished);
    IT_CHECK(status == 0); /* review5: 1, "Timeout was reached", yet the backup completes */
    if (status != 0) {
        IT_CHECK(strstr(out, "Timeout") == NULL);
    }
    /* what the on-call engineer reads: that it runs (with how far, every
     * 5 s, as long as it does), where it is */
    IT_CHECK(strstr(out, "backup started: ") != NULL);
    IT_CHECK(took < 5 || strstr(out, "backup running: ") != NULL);
    IT_CHECK(strstr(out, "backup written to ") != NULL);

    /* SIGTERM during a backup */
    snprintf(cmd, sizeof cmd,
             "env -i HOME='%s' SLUICE_ADMIN_ENDPOINT='%s' '%s/sluicectl' --admin-token " TOKEN
             " backup '%s/bk2' >/dev/null 2>&1 &",
             srv.dir, srv.admin_url, build ? build : ".", srv.dir);
    IT_CHECK(system(cmd) == 0);
    /* until the big file's copy has begun */
    char part[512];
    snprintf(part, sizeof part, "%s/bk2/part-0000.db", srv.dir);
    t1 = now_s();
    while ((stat(part, &sb) != 0 || sb.st_size == 0) && now_s() - t1 < 30) {
        it_sleep_ms(20);
    }
    IT_CHECK(stat(part, &sb) == 0);
    t0 = now_s();
    int stop = it_server_stop(&srv);
    fprintf(stderr, "SIGTERM during a backup: exit status %d after %.1f s\n", stop, now_s() - t0);
    IT_CHECK(stop == 0); /* review5: 1, from the shutdown watchdog at 40 s */
    /* stopped, not finished: nothing left that could pass for a backup */
    IT_CHECK(it_log_contains(&srv, "its partial copy is removed"));
    snprintf(part, sizeof part, "%s/bk2", srv.dir);
    IT_CHECK(stat(part, &sb) != 0);
    it_server_cleanup(&srv);
    return it_summary();
}
