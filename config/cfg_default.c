/*
 * cfg_default.c -- the configuration sluiced runs with when given none,
 * as README.md and docs/config.md describe it. Kept as YAML so it goes through the very same
 * loader and validation as a file does.
 */
#include "cfg.h"

static const char default_yaml[] = "listen: 127.0.0.1:9324\n"
                                   "region: us-east-1\n"
                                   "data_dir: ./sluice-data\n"
                                   "partitions: 16\n"
                                   "shard_size: 2\n"
                                   "durability: fsync\n"
                                   "tenants:\n"
                                   "  default:\n"
                                   "    access_key_id: default\n"
                                   "    secret_access_key: default\n";

const char *cfg_default_yaml(void)
{
    return default_yaml;
}
