/*
 * test_admin_auth_ration.c -- failed admin authentications are rationed
 * whatever the request's shape (docs/design.md, "failed admin
 * authentications"):
 *  - guesses of the bearer token without a body meet the ration (the
 *    control);
 *  - a wrong bearer token on a request with a body is refused when its
 *    headers arrive (gw_admin.c, on_headers); that refusal costs a token
 *    of the failure budget and is counted in
 *    sluice_admin_auth_failures_total, as the same guess without a body
 *    is: otherwise POSTs would guess the token without limit and unseen
 *    by the alert on guessing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "it_sqs.h"

#define TOKEN "ops-token_1"

static const char tenants_yaml[] = "  bearer_token: " TOKEN "\n"
                                   "tenants:\n"
                                   "  " IT_TENANT ":\n"
                                   "    access_key_id: " IT_KEY "\n"
                                   "    secret_access_key: " IT_SECRET "\n";

static struct it_server srv;

/* One admin request with the given bearer token from source (NULL: the
 * system's choice); the status, 0 when none came. */
static long admin_status(const char *method, const char *path, const char *body, const char *token,
                         const char *source)
{
    char authz[128];
    snprintf(authz, sizeof authz, "authorization: Bearer %s", token);
    const char *headers[] = {authz, "content-type: application/json", NULL};
    struct it_request req = {
        .method = method,
        .path = path,
        .headers = headers,
        .body = body,
        .body_len = body != NULL ? strlen(body) : 0,
        .admin = true,
        .source_address = source,
    };
    struct it_response r;
    long status = it_request(&srv, &req, &r) == 0 ? r.status : 0;
    it_response_free(&r);
    return status;
}

/* The budget refills at 10 a second up to 50: after this it is full. */
static void let_budget_refill(void)
{
    it_sleep_ms(6000);
}

static double failures_counted(void)
{
    double failed = it_metric(&srv, "sluice_admin_auth_failures_total{outcome=\"failed\"}");
    double throttled = it_metric(&srv, "sluice_admin_auth_failures_total{outcome=\"throttled\"}");
    return (failed < 0 ? 0 : failed) + (throttled < 0 ? 0 : throttled);
}

#define GUESSES 200

/* Control: guesses without a body meet the ration. */
static void check_guesses_without_body(void)
{
    int refused = 0, throttled = 0;
    for (int i = 0; i < GUESSES; i++) {
        long st = admin_status("GET", "/tenants", NULL, "wrong-token", NULL);
        refused += st == 403;
        throttled += st == 429;
    }
    IT_CHECK(refused > 0);
    IT_CHECK(throttled > 0);
    let_budget_refill();
}

/* The same guesses on a request with a body. */
static void check_guesses_with_body(void)
{
    double before = failures_counted();
    int refused = 0, throttled = 0;
    for (int i = 0; i < GUESSES; i++) {
        long st = admin_status("POST", "/api/reload", "{}", "wrong-token", NULL);
        refused += st == 403;
        throttled += st == 429;
    }
    fprintf(stderr, "with a body: %d of %d refused 403, %d throttled 429\n", refused, GUESSES,
            throttled);
    IT_CHECK(throttled > 0);
    let_budget_refill();
    double after = failures_counted();
    fprintf(stderr, "sluice_admin_auth_failures_total rose by %.0f for %d failures\n",
            after - before, GUESSES);
    IT_CHECK(after - before >= GUESSES);
    let_budget_refill();
}

int main(void)
{
    struct it_options opt = {.admin = true, .tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    check_guesses_without_body();
    check_guesses_with_body();
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
