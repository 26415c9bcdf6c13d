/*
 * test_check_config.c -- `sluiced --check-config FILE`: exit 0 for a valid
 * file, 1 for an invalid one with each problem as FILE:LINE:COLUMN: message;
 * `--help` exits 0; an unknown option exits non-zero.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "it_harness.h"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    IT_REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/sluice-it-cc-XXXXXX";
    IT_REQUIRE(mkdtemp(dir) != NULL);
    char good[256], bad[256], args[600];
    snprintf(good, sizeof(good), "%s/good.yaml", dir);
    snprintf(bad, sizeof(bad), "%s/bad.yaml", dir);
    write_text(good, "listen: 127.0.0.1:9324\n"
                     "data_dir: ./data\n"
                     "tenants:\n"
                     "  acme:\n"
                     "    access_key_id: AKIDACME\n"
                     "    secret_access_key: acme-secret\n");
    write_text(bad, "listen: 127.0.0.1:9324\n"
                    "no_such_key: 1\n"
                    "tenants:\n"
                    "  acme:\n"
                    "    access_key_id: AKIDACME\n"
                    "    secret_access_key: acme-secret\n");

    char *err = NULL;
    snprintf(args, sizeof(args), "--check-config '%s'", good);
    IT_CHECK(it_run_sluiced(args, &err) == 0);
    free(err);

    snprintf(args, sizeof(args), "--check-config '%s'", bad);
    IT_CHECK(it_run_sluiced(args, &err) == 1);
    char want[300];
    snprintf(want, sizeof(want), "%s:2:1: ", bad);
    IT_CHECK(strstr(err, want) != NULL);
    if (strstr(err, want) == NULL)
        fprintf(stderr, "stderr was: %s\n", err);
    free(err);

    snprintf(args, sizeof(args), "--check-config '%s/missing.yaml'", dir);
    IT_CHECK(it_run_sluiced(args, &err) == 1);
    IT_CHECK(strlen(err) > 0);
    free(err);

    IT_CHECK(it_run_sluiced("--help", &err) == 0);
    free(err);
    IT_CHECK(it_run_sluiced("--no-such-option", &err) != 0);
    free(err);

    unlink(good);
    unlink(bad);
    rmdir(dir);
    return it_summary();
}
