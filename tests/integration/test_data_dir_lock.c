/*
 * test_data_dir_lock.c -- one data_dir serves one process: a second
 * sluiced started, with a config of its own, on the data directory a
 * running sluiced serves must refuse to start (both would write the same
 * SQLite files with in-memory state -- counts, timers, leases, group
 * directory, dedup index, FIFO sequence clock -- the other never sees),
 * and the first keeps serving. The check is a reviewer's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

static struct it_server srv;

static void second_server_on_same_data_is_refused(struct it_options *opt)
{
    char *url = it_create_queue(&srv, "shared", NULL);
    IT_REQUIRE(url != NULL);
    struct it_server other;
    struct it_options o = *opt;
    IT_REQUIRE(it_server_start(&other, &o) == 0);
    IT_REQUIRE(it_server_stop(&other) == 0);
    snprintf(other.data_dir, sizeof other.data_dir, "%s", srv.data_dir);
    char yaml[4096];
    it_config_yaml(&other, &o, yaml, sizeof yaml);
    IT_REQUIRE(it_server_write_config(&other, yaml) == 0);
    int rc = it_server_restart(&other);
    IT_CHECK(rc != 0);
    if (rc == 0)
        (void)it_server_stop(&other);
    /* The first is unharmed. */
    char *id = it_send(&srv, url, "still served");
    IT_CHECK(id != NULL);
    free(id);
    it_server_cleanup(&other);
    free(url);
}

int main(void)
{
    struct it_options opt = {.partitions = 2};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    second_server_on_same_data_is_refused(&opt);
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
