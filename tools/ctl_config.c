/*
 * ctl_config.c -- sluicectl's settings: flags, then environment, then the
 * config file, then defaults (ctl_config.h).
 *
 * The CA bundle also honours the variables other TLS clients read
 * (CURL_CA_BUNDLE, SSL_CERT_FILE), after sluicectl's own SLUICE_CACERT,
 * so a shell already set up for a private CA needs nothing more.
 */
#include "ctl_config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sl.h"

static const struct {
    const char *flag;
    const char *env;
    const char *key;
    const char *def;
} SETTINGS[CTL_SETTING_COUNT] = {
    [CTL_ENDPOINT] = {"--endpoint", "SLUICE_ENDPOINT", "endpoint", "http://127.0.0.1:9324"},
    [CTL_ADMIN_ENDPOINT] = {"--admin-endpoint", "SLUICE_ADMIN_ENDPOINT", "admin_endpoint",
                            "http://127.0.0.1:9325"},
    [CTL_ACCESS_KEY_ID] = {"--access-key-id", "SLUICE_ACCESS_KEY_ID", "access_key_id", NULL},
    [CTL_SECRET] = {"--secret-access-key", "SLUICE_SECRET_ACCESS_KEY", "secret_access_key", NULL},
    [CTL_REGION] = {"--region", "SLUICE_REGION", "region", "us-east-1"},
    [CTL_ADMIN_TOKEN] = {"--admin-token", "SLUICE_ADMIN_TOKEN", "admin_token", NULL},
    [CTL_CACERT] = {"--cacert", "SLUICE_CACERT", "cacert", NULL},
};

const char *ctl_config_flag(enum ctl_setting s)
{
    return SETTINGS[s].flag;
}

const char *ctl_config_env(enum ctl_setting s)
{
    return SETTINGS[s].env;
}

const char *ctl_config_key(enum ctl_setting s)
{
    return SETTINGS[s].key;
}

static const char *env_value(const char *name)
{
    const char *v = getenv(name);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

/* Trims spaces at both ends, in place. */
static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r')) {
        s[--n] = '\0';
    }
    return s;
}

/* The config file's path: explicit, else the environment's, else the
 * XDG default; *explicit_path says whether a missing file is an error. */
static bool file_path(const struct ctl_config *c, char *out, size_t cap, bool *explicit_path)
{
    *explicit_path = true;
    if (c->config_path != NULL) {
        snprintf(out, cap, "%s", c->config_path);
        return true;
    }
    const char *v = env_value("SLUICECTL_CONFIG");
    if (v != NULL) {
        snprintf(out, cap, "%s", v);
        return true;
    }
    *explicit_path = false;
    const char *xdg = env_value("XDG_CONFIG_HOME");
    const char *home = env_value("HOME");
    if (xdg != NULL) {
        snprintf(out, cap, "%s/sluice/sluicectl.conf", xdg);
    } else if (home != NULL) {
        snprintf(out, cap, "%s/.config/sluice/sluicectl.conf", home);
    } else {
        return false;
    }
    return true;
}

static bool read_file(struct ctl_config *c, char *err, size_t cap)
{
    char path[512];
    bool explicit_path;
    if (!file_path(c, path, sizeof path, &explicit_path)) {
        return true;
    }
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (explicit_path || errno != ENOENT) {
            snprintf(err, cap, "cannot read the config file %s: %s", path, strerror(errno));
            return false;
        }
        return true;
    }
    snprintf(c->file_used, sizeof c->file_used, "%s", path);
    char line[1024];
    int lineno = 0;
    bool ok = true;
    while (ok && fgets(line, sizeof line, f) != NULL) {
        lineno++;
        /* A comment starts at a '#' that begins the line or follows a
         * space or tab, as in a shell: a secret may hold '#', and cutting
         * it there made every signature fail with no hint why. */
        for (char *h = strchr(line, '#'); h != NULL; h = strchr(h + 1, '#')) {
            if (h == line || h[-1] == ' ' || h[-1] == '\t') {
                *h = '\0';
                break;
            }
        }
        char *text = trim(line);
        if (*text == '\0') {
            continue;
        }
        char *eq = strchr(text, '=');
        int which = -1;
        if (eq != NULL) {
            *eq = '\0';
            const char *key = trim(text);
            for (int s = 0; s < CTL_SETTING_COUNT && which < 0; s++) {
                which = strcmp(SETTINGS[s].key, key) == 0 ? s : -1;
            }
        }
        if (which < 0) {
            snprintf(err, cap,
                     "%s:%d: expected \"key = value\" with a key of endpoint, "
                     "admin_endpoint, access_key_id, secret_access_key, region, "
                     "admin_token, cacert",
                     path, lineno);
            ok = false;
            break;
        }
        free(c->file_values[which]);
        c->file_values[which] = sl_xstrdup(trim(eq + 1));
    }
    fclose(f);
    return ok;
}

bool ctl_config_resolve(struct ctl_config *c, char *err, size_t cap)
{
    if (!read_file(c, err, cap)) {
        return false;
    }
    for (int s = 0; s < CTL_SETTING_COUNT; s++) {
        const char *env = env_value(SETTINGS[s].env);
        if (s == CTL_CACERT && env == NULL) {
            env = env_value("CURL_CA_BUNDLE");
            env = env != NULL ? env : env_value("SSL_CERT_FILE");
        }
        if (c->flag[s] != NULL) {
            c->value[s] = c->flag[s];
            c->from[s] = "flag";
        } else if (env != NULL) {
            c->value[s] = env;
            c->from[s] = "environment";
        } else if (c->file_values[s] != NULL && c->file_values[s][0] != '\0') {
            c->value[s] = c->file_values[s];
            c->from[s] = "config file";
        } else {
            c->value[s] = SETTINGS[s].def;
            c->from[s] = SETTINGS[s].def != NULL ? "default" : NULL;
        }
    }
    return true;
}

void ctl_config_free(struct ctl_config *c)
{
    for (int s = 0; s < CTL_SETTING_COUNT; s++) {
        free(c->file_values[s]);
        c->file_values[s] = NULL;
    }
}
