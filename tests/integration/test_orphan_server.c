/*
 * test_orphan_server.c -- a test that is killed takes its sluiced with it.
 *
 * A child test process starts sluiced through the harness and is then
 * killed with SIGKILL, as a ctest timeout or a CI runner's cancel does:
 * no cleanup of its own runs. The sluiced it started must die too
 * (it_harness.c asks the kernel for SIGKILL when its parent dies);
 * before, it went on serving, holding its port and its temp directory,
 * and the next run found it there.
 *
 * This process is the orphan's child subreaper, so the orphaned sluiced
 * is reparented here and its end can be waited for and its cause read,
 * whatever init does (a container's PID 1 may never reap it).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "it_harness.h"

/* The child: starts sluiced, reports "PID DIR\n" on fd and waits to be
 * killed. */
static void child(int fd)
{
    struct it_server srv;
    if (it_server_start(&srv, &(struct it_options){0}) != 0) {
        _exit(2);
    }
    char line[512];
    int n = snprintf(line, sizeof line, "%d %s\n", (int)srv.pid, srv.dir);
    if (n <= 0 || write(fd, line, (size_t)n) != n) {
        _exit(3);
    }
    for (;;) {
        pause();
    }
}

/* Up to ms for pid (a child of ours) to end; its wait status, or -1. */
static int wait_end(pid_t pid, int ms)
{
    for (int waited = 0; waited <= ms; waited += 20) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) {
            return st;
        }
        if (r < 0 && errno != EINTR) {
            return -1;
        }
        it_sleep_ms(20);
    }
    return -1;
}

int main(void)
{
    IT_REQUIRE(prctl(PR_SET_CHILD_SUBREAPER, 1) == 0);
    int fds[2];
    IT_REQUIRE(pipe(fds) == 0);
    pid_t test = fork();
    IT_REQUIRE(test >= 0);
    if (test == 0) {
        close(fds[0]);
        child(fds[1]);
    }
    close(fds[1]);
    char line[512] = "";
    size_t got = 0;
    ssize_t n;
    while (got < sizeof line - 1 && (n = read(fds[0], line + got, sizeof line - 1 - got)) > 0) {
        got += (size_t)n;
        if (memchr(line, '\n', got) != NULL) {
            break;
        }
    }
    close(fds[0]);
    int server = 0;
    char dir[400] = "";
    IT_REQUIRE(sscanf(line, "%d %399s", &server, dir) == 2 && server > 0);

    IT_REQUIRE(kill(test, SIGKILL) == 0);
    IT_CHECK(waitpid(test, NULL, 0) == test);
    /* Bounded generously for a sanitizer build on a busy machine; the
     * kill itself is immediate. */
    int st = wait_end(server, 20000);
    IT_CHECK(st != -1 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
    if (st == -1) {
        fprintf(stderr, "sluiced %d outlived the test that started it\n", server);
        kill(server, SIGKILL);
        waitpid(server, NULL, 0);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    IT_CHECK(system(cmd) == 0);
    return it_summary();
}
