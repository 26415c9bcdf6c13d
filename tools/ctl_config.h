/*
 * ctl_config.h -- where sluicectl finds its endpoints and credentials
 * (ctl_config.c): each setting from its flag, else its environment
 * variable, else the config file, else (endpoints and region only) a
 * default. Keys and secrets have no default: a missing one is an error
 * that names all three places, never a silent fall back to the demo
 * credentials.
 *
 * The config file is --config PATH, else $SLUICECTL_CONFIG, else
 * $XDG_CONFIG_HOME/sluice/sluicectl.conf (~/.config/... without XDG), as
 * "key = value" lines ('#' starts a comment): endpoint, admin_endpoint,
 * access_key_id, secret_access_key, region, admin_token, cacert.
 */
#ifndef SLUICE_CTL_CONFIG_H
#define SLUICE_CTL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

enum ctl_setting {
    CTL_ENDPOINT,
    CTL_ADMIN_ENDPOINT,
    CTL_ACCESS_KEY_ID,
    CTL_SECRET,
    CTL_REGION,
    CTL_ADMIN_TOKEN,
    CTL_CACERT,
    CTL_SETTING_COUNT,
};

struct ctl_config {
    const char *flag[CTL_SETTING_COUNT]; /* from the command line; borrowed */
    const char *config_path;             /* --config; borrowed */
    /* resolved: borrowed from argv, the environment or file_values */
    const char *value[CTL_SETTING_COUNT];
    const char *from[CTL_SETTING_COUNT];  /* "flag", "environment", "config file", "default" */
    char *file_values[CTL_SETTING_COUNT]; /* owned */
    char file_used[512];                  /* the config file read, or "" */
};

/* Resolves every setting. Returns true, or false with a sentence in err
 * (an unreadable --config file or a line it cannot parse). */
bool ctl_config_resolve(struct ctl_config *c, char *err, size_t cap);
/* The flag, variable and file key of a setting, for messages. */
const char *ctl_config_flag(enum ctl_setting s);
const char *ctl_config_env(enum ctl_setting s);
const char *ctl_config_key(enum ctl_setting s);
void ctl_config_free(struct ctl_config *c);

#endif
