/*
 * sluice_load.c -- main() of build/sluice-load, the load generator: parses
 * the command line, runs the scenario (lt_run.c) and reports.
 *
 * Exit status: 0 the run completed (errors from the gateway are results,
 * not failures); 1 bad usage or a report could not be written; 2 no
 * connection to the gateway; 3 the gateway cannot run this scenario yet
 * (set-up failed, e.g. CreateQueue is not implemented), with the reason in
 * the report and in the JSON record.
 */
#include "lt_int.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>

static int print_signed_headers(const struct lt_opts *o)
{
    char target[128];
    snprintf(target, sizeof(target), "AmazonSQS.%s", o->raw_action);
    struct sigv4_header extra[] = {
        {SL_SLICE_LIT("content-type"), SL_SLICE_LIT("application/x-amz-json-1.0")},
        {SL_SLICE_LIT("x-amz-target"), sl_slice_cstr(target)},
    };
    struct lt_credentials cred = {o->tenants[0].access_key_id, o->tenants[0].secret, o->region,
                                  "sqs"};
    char amz_date[17];
    struct sl_buf auth;
    sl_buf_init(&auth);
    int rc = lt_sign(&cred, "/", o->authority, extra, SL_ARRAY_LEN(extra),
                     sl_slice_cstr(o->raw_json), (int64_t)(sl_wall_ms() / 1000), amz_date, &auth);
    if (rc != SL_OK) {
        fprintf(stderr, "sluice-load: signing failed: %s\n", sl_strerror(rc));
        sl_buf_free(&auth);
        return 1;
    }
    /* One header per line, ready for h2load -H; valid for 15 minutes. */
    printf("content-type: application/x-amz-json-1.0\n");
    printf("x-amz-target: %s\n", target);
    printf("x-amz-date: %s\n", amz_date);
    printf("authorization: %s\n", auth.p);
    sl_buf_free(&auth);
    return 0;
}

int main(int argc, char **argv)
{
    struct lt_opts o;
    char err[256];
    /* A server that closes a connection while requests are still being
     * written (an HTTP/1.1 "Connection: close", a GOAWAY) must fail those
     * requests with EPIPE, not end the run. */
    signal(SIGPIPE, SIG_IGN);
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {
        printf("sluice-load %s (commit %s)\n", sl_version(), sl_build_commit());
        return 0;
    }
    lt_opts_init(&o);
    if (lt_opts_parse(&o, argc, argv, err, sizeof(err)) != SL_OK) {
        bool help = strcmp(err, "help") == 0;
        if (!help) {
            fprintf(stderr, "sluice-load: %s\n", err);
        }
        lt_opts_usage(help ? stdout : stderr);
        lt_opts_fini(&o);
        return help ? 0 : 1;
    }
    if (o.print_signed_headers) {
        int rc = print_signed_headers(&o);
        lt_opts_fini(&o);
        return rc;
    }
    struct lt_result r;
    int status = lt_run(&o, &r);
    int exit_code = 0;
    if (status == SL_EINVAL) {
        lt_opts_fini(&o);
        return 1;
    }
    lt_result_print(&r, stdout);
    if (o.json_path != NULL && lt_result_write_json(&r, o.json_path) != SL_OK) {
        fprintf(stderr, "sluice-load: cannot write %s\n", o.json_path);
        exit_code = 1;
    }
    if (o.plot_path != NULL && r.setup_error[0] == '\0' &&
        lt_result_plot(&r, o.plot_path) != SL_OK) {
        fprintf(stderr, "sluice-load: gnuplot failed for %s\n", o.plot_path);
        exit_code = 1;
    }
    if (status == SL_EIO) {
        exit_code = 2;
    } else if (status == SL_ECLOSED) {
        exit_code = 3;
    }
    lt_result_fini(&r);
    lt_opts_fini(&o);
    return exit_code;
}
