/*
 * sluicectl -- the operators' command-line tool. It talks to a running
 * sluiced over the SQS API like any SQS client (HTTP/2, SigV4 with the
 * gateway's own signer; see ctl_client.c) and over the admin API
 * (docs/admin.md) for what SQS has no action for: peeks that lease
 * nothing, pause, reload, backup, live views.
 *
 * Written for the on-call engineer at 3 a.m.: aligned tables by default,
 * --json for scripts, errors read "error: <Code>: <message>" with exit
 * status 1, usage mistakes exit 2, and nothing destructive happens
 * without --yes. Endpoints and credentials come from flags, then the
 * environment, then a config file (ctl_config.h), and never silently
 * from anywhere else.
 *
 * This file parses the command line and routes; the commands are in
 * ctl_cmd_sqs.c and ctl_cmd_admin.c.
 *
 * Threading: one thread. Everything allocated is freed before exit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>

#include "ctl_cmd.h"
#include "ctl_config.h"
#include "sl.h"

static void print_version(void)
{
    printf("sluicectl %s (commit %s)\n", sl_version(), sl_build_commit());
}

static void usage(FILE *out)
{
    fputs("usage: sluicectl [options] <command> [arguments]\n"
          "\n"
          "SQS API commands (a tenant's keys, or the admin's):\n"
          "  queues [PREFIX]            list queues, every page (the admin sees every\n"
          "                             tenant's)\n"
          "      sluicectl queues orders-\n"
          "  attrs QUEUE_URL [KEY=VALUE...]  a queue's attributes; with up to 4\n"
          "      filters, how many messages carrying all of them are ready and in\n"
          "      flight (SluiceFilteredMessages, SluiceFilteredMessagesNotVisible)\n"
          "      sluicectl attrs http://127.0.0.1:9324/acme/orders\n"
          "      sluicectl attrs http://127.0.0.1:9324/acme/encodes project=p-17\n"
          "  dlq sources QUEUE_URL      queues whose dead-letter queue this is\n"
          "      sluicectl dlq sources http://127.0.0.1:9324/acme/orders-dlq\n"
          "  redrive start DLQ [--to QUEUE] [--rate N] [--wait]\n"
          "                             move a DLQ's messages back to their source queues\n"
          "                             (or to QUEUE) at N messages/s (1..500; default: as\n"
          "                             fast as the gateway allows); --wait follows it with\n"
          "                             a progress bar (plain lines when not on a terminal)\n"
          "      sluicectl redrive start acme/orders-dlq --rate 50 --wait\n"
          "  redrive status DLQ         the DLQ's recent move tasks, newest first\n"
          "      sluicectl redrive status acme/orders-dlq\n"
          "  redrive cancel TASK_HANDLE stop a running move task (moved messages stay moved)\n"
          "      sluicectl redrive cancel eyJ0YXNrSWQiOi...\n"
          "  purge QUEUE_URL --yes      delete every message of a queue\n"
          "      sluicectl purge http://127.0.0.1:9324/acme/orders-dlq --yes\n"
          "\n",
          out);
    fputs("admin API commands (the admin's keys or --admin-token):\n"
          "  tenants                    each tenant's limits, usage and partitions\n"
          "      sluicectl tenants\n"
          "  watch TENANT [--interval S] [--count N]\n"
          "                             live view of a tenant's queues (counts, oldest\n"
          "                             message, pause, DLQ links), every S seconds (2)\n"
          "      sluicectl watch acme --interval 1\n"
          "  dlq peek QUEUE [N]         show up to N (10, max 100) ready messages without\n"
          "                             leasing them or counting a receive\n"
          "      sluicectl dlq peek acme/orders-dlq 20\n"
          "  pause QUEUE [--enqueue | --dequeue]\n"
          "                             stop sends (QueuePaused), receives (answered empty)\n"
          "                             or both (default); survives restarts\n"
          "      sluicectl pause acme/orders --enqueue\n"
          "  resume QUEUE [--enqueue | --dequeue]\n"
          "                             undo a pause (both directions by default)\n"
          "      sluicectl resume acme/orders\n"
          "  reload                     re-read the gateway's configuration file; prints its\n"
          "                             diagnostics (exit 1 when it is invalid)\n"
          "      sluicectl reload\n"
          "  backup DIR                 consistent snapshot of every partition and the\n"
          "                             catalog into DIR on the gateway's host, with a\n"
          "                             manifest and checksums (see docs/operations.md);\n"
          "                             follows it to its end with a progress line\n"
          "      sluicectl backup /var/backups/sluice/2026-11-27\n"
          "  cluster status             a cluster's node: the nodes, and each Raft group's\n"
          "                             leader, term, commit and applied index, lag and\n"
          "                             last snapshot as that node sees them\n"
          "      sluicectl cluster status --admin-endpoint http://127.0.0.1:19411\n"
          "  version                    the version and the git commit it was built from\n"
          "\n",
          out);
    fputs("QUEUE and DLQ: an ARN (arn:aws:sqs:REGION:TENANT:NAME), a queue URL, or\n"
          "TENANT/NAME.\n"
          "\n"
          "options (each: the flag, else the environment variable, else the config file):\n"
          "  --endpoint URL           SQS API (SLUICE_ENDPOINT; default http://127.0.0.1:9324)\n"
          "  --admin-endpoint URL     admin API (SLUICE_ADMIN_ENDPOINT; default\n"
          "                           http://127.0.0.1:9325)\n"
          "  --access-key-id KEY      (SLUICE_ACCESS_KEY_ID; no default)\n"
          "  --secret-access-key KEY  (SLUICE_SECRET_ACCESS_KEY; no default)\n"
          "  --admin-token TOKEN      admin.bearer_token, for admin commands\n"
          "                           (SLUICE_ADMIN_TOKEN)\n"
          "  --region REGION          (SLUICE_REGION; default us-east-1)\n"
          "  --cacert FILE            PEM CA bundle for a TLS gateway with a private CA\n"
          "                           (SLUICE_CACERT, CURL_CA_BUNDLE, SSL_CERT_FILE)\n"
          "  --config FILE            config file (SLUICECTL_CONFIG; default\n"
          "                           ~/.config/sluice/sluicectl.conf): key = value lines\n"
          "                           with the keys endpoint, admin_endpoint, access_key_id,\n"
          "                           secret_access_key, admin_token, region, cacert\n"
          "  --json                   print the reply documents instead of tables\n"
          "  --yes                    confirm a destructive command\n"
          "  --version                the version and the git commit it was built from\n"
          "  -h, --help               this text\n"
          "\n"
          "exit status: 0 done, 1 the call failed (error: <Code>: <message>), 2 usage or\n"
          "missing credentials\n",
          out);
}

static const char *option_value(int argc, char **argv, int *i)
{
    const char *arg = argv[*i];
    const char *eq = strchr(arg, '=');
    if (eq != NULL) {
        return eq + 1;
    }
    if (*i + 1 >= argc) {
        return NULL;
    }
    return argv[++*i];
}

static bool option_is(const char *arg, const char *name)
{
    size_t n = strlen(name);
    return strncmp(arg, name, n) == 0 && (arg[n] == '\0' || arg[n] == '=');
}

/* A whole number in [lo, hi] from an option's value. */
static bool number_option(const char *v, long lo, long hi, long *out)
{
    char *end = NULL;
    long n = v != NULL ? strtol(v, &end, 10) : 0;
    if (v == NULL || end == v || *end != '\0' || n < lo || n > hi) {
        return false;
    }
    *out = n;
    return true;
}

/* The commands and what they need. */
enum need { NEED_NOTHING, NEED_KEYS, NEED_ADMIN };

static enum need need_of(const char *cmd, const char *sub)
{
    if (strcmp(cmd, "version") == 0) {
        return NEED_NOTHING;
    }
    if (strcmp(cmd, "tenants") == 0 || strcmp(cmd, "watch") == 0 || strcmp(cmd, "pause") == 0 ||
        strcmp(cmd, "resume") == 0 || strcmp(cmd, "reload") == 0 || strcmp(cmd, "backup") == 0 ||
        strcmp(cmd, "cluster") == 0 || (strcmp(cmd, "dlq") == 0 && strcmp(sub, "peek") == 0)) {
        return NEED_ADMIN;
    }
    return NEED_KEYS;
}

/* Refuses to go on without the credentials the command needs, naming
 * where they can come from (never the demo defaults). */
static bool have_credentials(const struct ctl_config *cfg, enum need need)
{
    bool keys = cfg->value[CTL_ACCESS_KEY_ID] != NULL && cfg->value[CTL_SECRET] != NULL;
    if (need == NEED_NOTHING || keys ||
        (need == NEED_ADMIN && cfg->value[CTL_ADMIN_TOKEN] != NULL)) {
        return true;
    }
    fprintf(stderr,
            "sluicectl: no credentials: pass %s and %s%s, or set %s and %s%s, or write %s and %s "
            "into the config file (%s)\n",
            ctl_config_flag(CTL_ACCESS_KEY_ID), ctl_config_flag(CTL_SECRET),
            need == NEED_ADMIN ? " (or --admin-token)" : "", ctl_config_env(CTL_ACCESS_KEY_ID),
            ctl_config_env(CTL_SECRET), need == NEED_ADMIN ? " (or SLUICE_ADMIN_TOKEN)" : "",
            ctl_config_key(CTL_ACCESS_KEY_ID), ctl_config_key(CTL_SECRET),
            cfg->file_used[0] != '\0' ? cfg->file_used : "~/.config/sluice/sluicectl.conf");
    return false;
}

static int run(struct ctl *c, const char *cmd, const char *sub, int nwords)
{
    if (strcmp(cmd, "queues") == 0) {
        return ctl_cmd_queues(c);
    } else if (strcmp(cmd, "attrs") == 0) {
        return ctl_cmd_attrs(c);
    } else if (strcmp(cmd, "dlq") == 0 && strcmp(sub, "sources") == 0) {
        return ctl_cmd_dlq_sources(c);
    } else if (strcmp(cmd, "dlq") == 0 && strcmp(sub, "peek") == 0) {
        return ctl_cmd_dlq_peek(c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "start") == 0) {
        return ctl_cmd_redrive_start(c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "status") == 0) {
        return ctl_cmd_redrive_status(c);
    } else if (strcmp(cmd, "redrive") == 0 && strcmp(sub, "cancel") == 0) {
        return ctl_cmd_redrive_cancel(c);
    } else if (strcmp(cmd, "purge") == 0) {
        return ctl_cmd_purge(c);
    } else if (strcmp(cmd, "tenants") == 0) {
        return ctl_cmd_tenants(c);
    } else if (strcmp(cmd, "watch") == 0) {
        return ctl_cmd_watch(c);
    } else if (strcmp(cmd, "pause") == 0 || strcmp(cmd, "resume") == 0) {
        return ctl_cmd_pause(c, strcmp(cmd, "pause") == 0);
    } else if (strcmp(cmd, "reload") == 0) {
        return ctl_cmd_reload(c);
    } else if (strcmp(cmd, "backup") == 0) {
        return ctl_cmd_backup(c);
    } else if (strcmp(cmd, "cluster") == 0 && strcmp(sub, "status") == 0) {
        return ctl_cmd_cluster_status(c);
    }
    int rc = ctl_usage_error("unknown command %s", nwords > 1 ? sub : cmd);
    if (nwords > 1) {
        fprintf(stderr, "(in %s)\n", cmd);
    }
    return rc;
}

int main(int argc, char **argv)
{
    struct ctl c = {0};
    struct ctl_config cfg = {0};
    static const struct {
        const char *flag;
        enum ctl_setting setting;
    } settings[] = {
        {"--endpoint", CTL_ENDPOINT},
        {"--admin-endpoint", CTL_ADMIN_ENDPOINT},
        {"--access-key-id", CTL_ACCESS_KEY_ID},
        {"--secret-access-key", CTL_SECRET},
        {"--region", CTL_REGION},
        {"--admin-token", CTL_ADMIN_TOKEN},
        {"--cacert", CTL_CACERT},
    };
    const char *words[3];
    int nwords = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char **slot = NULL;
        for (size_t s = 0; s < sizeof settings / sizeof settings[0] && slot == NULL; s++) {
            if (option_is(a, settings[s].flag)) {
                slot = &cfg.flag[settings[s].setting];
            }
        }
        if (slot != NULL) {
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return CTL_EXIT_OK;
        } else if (strcmp(a, "--version") == 0) {
            print_version();
            return CTL_EXIT_OK;
        } else if (strcmp(a, "--json") == 0) {
            c.json = true;
            continue;
        } else if (strcmp(a, "--yes") == 0) {
            c.yes = true;
            continue;
        } else if (strcmp(a, "--wait") == 0) {
            c.wait = true;
            continue;
        } else if (strcmp(a, "--enqueue") == 0) {
            c.enqueue_only = true;
            continue;
        } else if (strcmp(a, "--dequeue") == 0) {
            c.dequeue_only = true;
            continue;
        } else if (option_is(a, "--config")) {
            slot = &cfg.config_path;
        } else if (option_is(a, "--to")) {
            slot = &c.to;
        } else if (option_is(a, "--rate")) {
            const char *v = option_value(argc, argv, &i);
            if (!number_option(v, 1, 500, &c.rate)) {
                return ctl_usage_error("--rate must be 1..500 messages per second, not %s",
                                       v ? v : "nothing");
            }
            continue;
        } else if (option_is(a, "--interval")) {
            const char *v = option_value(argc, argv, &i);
            long s;
            if (!number_option(v, 1, 3600, &s)) {
                return ctl_usage_error("--interval must be 1..3600 seconds, not %s",
                                       v ? v : "nothing");
            }
            c.interval_ms = s * 1000;
            continue;
        } else if (option_is(a, "--count")) {
            const char *v = option_value(argc, argv, &i);
            if (!number_option(v, 1, 1000000, &c.count)) {
                return ctl_usage_error("--count must be a positive number, not %s",
                                       v ? v : "nothing");
            }
            continue;
        } else if (a[0] == '-' && a[1] == '-') {
            return ctl_usage_error("unknown option %s", a);
        } else if (nwords < 1 || (nwords < 2 && (strcmp(words[0], "dlq") == 0 ||
                                                 strcmp(words[0], "redrive") == 0 ||
                                                 strcmp(words[0], "cluster") == 0))) {
            words[nwords++] = a;
            continue;
        } else if (c.nargs < (int)(sizeof c.args / sizeof c.args[0])) {
            c.args[c.nargs++] = a;
            continue;
        } else {
            return ctl_usage_error("too many arguments at %s", a);
        }
        const char *v = option_value(argc, argv, &i);
        if (v == NULL) {
            return ctl_usage_error("%s needs a value", a);
        }
        *slot = v;
    }
    if (nwords == 0) {
        usage(stderr);
        return CTL_EXIT_USAGE;
    }
    const char *cmd = words[0];
    const char *sub = nwords > 1 ? words[1] : "";
    if (strcmp(cmd, "version") == 0) {
        print_version();
        return CTL_EXIT_OK;
    }
    if (c.enqueue_only && c.dequeue_only) {
        return ctl_usage_error("--enqueue and --dequeue together are the default (both)");
    }
    char err[600];
    if (!ctl_config_resolve(&cfg, err, sizeof err)) {
        fprintf(stderr, "sluicectl: %s\n", err);
        ctl_config_free(&cfg);
        return CTL_EXIT_USAGE;
    }
    if (!have_credentials(&cfg, need_of(cmd, sub))) {
        ctl_config_free(&cfg);
        return CTL_EXIT_USAGE;
    }
    c.ep = (struct ctl_endpoint){
        .url = cfg.value[CTL_ENDPOINT],
        .admin_url = cfg.value[CTL_ADMIN_ENDPOINT],
        .access_key_id = cfg.value[CTL_ACCESS_KEY_ID],
        .secret = cfg.value[CTL_SECRET],
        .region = cfg.value[CTL_REGION],
        .admin_token = cfg.value[CTL_ADMIN_TOKEN],
        .cacert = cfg.value[CTL_CACERT],
    };
    curl_global_init(CURL_GLOBAL_DEFAULT);
    int rc = run(&c, cmd, sub, nwords);
    curl_global_cleanup();
    ctl_config_free(&cfg);
    return rc;
}
