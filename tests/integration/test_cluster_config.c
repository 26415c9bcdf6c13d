/*
 * test_cluster_config.c -- the cluster: section from the outside:
 * `sluiced --check-config` accepts a valid one (exit 0) and refuses two
 * nodes with one id, or a node list that disagrees with this node's own
 * addresses, with FILE:LINE:COLUMN (exit 1); `sluiced --config` with a
 * valid cluster section refuses to start (exit 1, before it touches
 * data_dir) and says that clustering is not built in this version; and a
 * SIGHUP that adds the section to a running node is logged as needing a
 * restart while the node goes on serving.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "it_harness.h"

#define NODE_2 "    - {id: 2, raft: 127.0.0.1:7002, peer: 127.0.0.1:7102, api: 127.0.0.1:9334}\n"
#define NODE_3 "    - {id: 3, raft: 127.0.0.1:7003, peer: 127.0.0.1:7103, api: 127.0.0.1:9344}\n"

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    IT_REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* A cluster section for node 1 with its secret at secret; nodes holds the
 * lines of the list. */
static void cluster_yaml(char *buf, size_t cap, const char *secret, const char *nodes)
{
    snprintf(buf, cap,
             "cluster:\n"
             "  node_id: 1\n"
             "  raft: 127.0.0.1:7001\n"
             "  peer: 127.0.0.1:7101\n"
             "  secret_file: %s\n"
             "  nodes:\n"
             "%s",
             secret, nodes);
}

/* `sluiced --check-config path`: its exit status; *err gets its stderr. */
static int check_config(const char *path, char **err)
{
    char args[600];
    snprintf(args, sizeof(args), "--check-config '%s'", path);
    return it_run_sluiced(args, err);
}

static bool expect_in(const char *text, const char *want)
{
    if (strstr(text, want) != NULL)
        return true;
    fprintf(stderr, "wanted: %s\nstderr was: %s\n", want, text);
    return false;
}

/* Runs `sluiced --config config` with stderr into err_path and returns its
 * exit status; or -1 when it still runs after 20 s (then it is killed): a
 * node that did start with a cluster section would run until stopped. */
static int run_bounded(const char *config, const char *err_path)
{
    pid_t pid = fork();
    IT_REQUIRE(pid >= 0);
    if (pid == 0) {
        int fd = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, 2) < 0)
            _exit(127);
        execl(it_sluiced_path(), "sluiced", "--config", config, (char *)NULL);
        _exit(127);
    }
    for (int i = 0; i < 200; i++) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid)
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        usleep(100 * 1000);
    }
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    return -1;
}

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    IT_REQUIRE(f != NULL);
    static char buf[16384];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

int main(void)
{
    char dir[] = "/tmp/sluice-it-cluster-XXXXXX";
    IT_REQUIRE(mkdtemp(dir) != NULL);
    char secret[256], good[256], dup[256], self[256], err_path[256], data[256];
    snprintf(secret, sizeof(secret), "%s/cluster.secret", dir);
    snprintf(good, sizeof(good), "%s/good.yaml", dir);
    snprintf(dup, sizeof(dup), "%s/dup.yaml", dir);
    snprintf(self, sizeof(self), "%s/self.yaml", dir);
    snprintf(err_path, sizeof(err_path), "%s/sluiced.err", dir);
    snprintf(data, sizeof(data), "%s/data", dir);
    write_text(secret, "0123456789abcdef0123456789abcdef-it\n");

    char section[2048], text[4096];
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2 NODE_3);
    snprintf(text, sizeof(text), "listen: 127.0.0.1:9324\ndata_dir: %s\n%s", data, section);
    write_text(good, text);

    /* Lines 1-6 are the section's own keys; the list starts on line 7. */
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2
                 "    - {id: 2, raft: 127.0.0.1:7003, peer: 127.0.0.1:7103, api: "
                 "127.0.0.1:9344}\n");
    write_text(dup, section);
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7011, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n" NODE_2 NODE_3);
    write_text(self, section);

    char *err = NULL;
    IT_CHECK(check_config(good, &err) == 0);
    IT_CHECK(expect_in(err, "configuration is valid"));
    free(err);

    char want[512];
    IT_CHECK(check_config(dup, &err) == 1);
    snprintf(want, sizeof(want), "%s:9:12: node id 2 is already used by the entry on line 8", dup);
    IT_CHECK(expect_in(err, want));
    free(err);

    IT_CHECK(check_config(self, &err) == 1);
    snprintf(want, sizeof(want),
             "%s:7:21: node 1 is this node (node_id), but its raft \"127.0.0.1:7011\" differs "
             "from cluster.raft \"127.0.0.1:7001\" (line 3)",
             self);
    IT_CHECK(expect_in(err, want));
    free(err);

    /* Valid, yet not run: a node must not pretend to be clustered. */
    IT_CHECK(run_bounded(good, err_path) == 1);
    IT_CHECK(expect_in(read_all(err_path), "has a cluster: section, but clustering is designed "
                                           "(docs/design.md \"Cluster\") and not built in this "
                                           "version; not starting"));
    IT_CHECK(access(data, F_OK) != 0);

    /* A reload cannot turn a running node into a cluster's. */
    struct it_server srv;
    struct it_options opt = {0};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    cluster_yaml(section, sizeof(section), secret,
                 "    - {id: 1, raft: 127.0.0.1:7001, peer: 127.0.0.1:7101, api: "
                 "127.0.0.1:9324}\n");
    char replication[2100];
    snprintf(replication, sizeof(replication), "%s  replication: 1\n", section);
    opt.extra_yaml = replication;
    char yaml[8192];
    it_config_yaml(&srv, &opt, yaml, sizeof(yaml));
    IT_CHECK(it_server_write_config(&srv, yaml) == 0);
    it_server_signal(&srv, SIGHUP);
    IT_CHECK(it_wait_log(&srv, "needs a restart to take effect: cluster was added", 10000));
    IT_CHECK(it_wait_log(&srv, "reload: configuration from", 10000));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);

    unlink(good);
    unlink(dup);
    unlink(self);
    unlink(secret);
    unlink(err_path);
    rmdir(dir);
    return it_summary();
}
