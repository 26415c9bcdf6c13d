/*
 * test_console.c -- the web console on the admin listener of the real
 * sluiced (docs/console.md), over HTTP/2 and HTTP/1.1:
 *  - "/" and the console page send a browser without credentials to the
 *    login page; the login page and the console's files answer without
 *    credentials, with a Content-Security-Policy that allows no inline
 *    script, nosniff, and an entity tag that revalidates to 304;
 *  - a login with a wrong secret, a malformed body, or from another
 *    origin is refused (a wrong secret audited); the admin secret sets a
 *    cookie that is HttpOnly, SameSite=Strict, Path=/ and bounded in
 *    time, and answers the CSRF token;
 *  - the cookie authenticates admin API reads and the console page;
 *    GET /console/session gives the same CSRF token;
 *  - a write with the cookie and no token, a wrong token, or a foreign
 *    Origin gets 403 and changes nothing; with the token an admin API
 *    write passes, audited with the session's principal; logout clears the
 *    cookie and the session no longer works, even for reads;
 *  - GET /console/history has every queue's recent counts: three sends
 *    show in a later sample;
 *  - a tenant's SigV4 key gets 403 on every console route; the admin's
 *    SigV4 signature gets the page;
 *  - a SIGHUP that rotates the admin secret ends the sessions opened with
 *    the old one;
 *  - over TLS the cookie is __Host- prefixed and Secure;
 *  - failed logins past their burst are refused unchecked (429), even
 *    with the right secret, while another client address logs in at
 *    once; both kinds of refusal are counted in
 *    sluice_admin_auth_failures_total.
 */
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "it_sqs.h"

#define LOGIN_FAILURE_BURST 10 /* GW_CONSOLE_LOGIN_FAILURES_BURST */

static struct it_server srv;

struct call {
    const char *method;
    const char *path;
    const char *body;
    const char *cookie; /* the session cookie's "name=value", or NULL */
    const char *csrf;   /* X-Sluice-CSRF, or NULL */
    const char *origin; /* Origin, or NULL */
    const char *extra;  /* one more "name: value" header, or NULL */
    const char *key;    /* SigV4 */
    const char *secret;
    bool http1;
    const char *source; /* the client's address, or NULL */
};

static struct it_response call(const struct it_server *s, const struct call *c)
{
    char cookie[200], csrf[120], origin[120];
    const char *headers[5];
    size_t n = 0;
    if (c->cookie != NULL) {
        snprintf(cookie, sizeof(cookie), "cookie: theme=dark; %s", c->cookie);
        headers[n++] = cookie;
    }
    if (c->csrf != NULL) {
        snprintf(csrf, sizeof(csrf), "x-sluice-csrf: %s", c->csrf);
        headers[n++] = csrf;
    }
    if (c->origin != NULL) {
        snprintf(origin, sizeof(origin), "origin: %s", c->origin);
        headers[n++] = origin;
    }
    if (c->extra != NULL) {
        headers[n++] = c->extra;
    }
    headers[n] = NULL;
    struct it_admin_call admin = {
        .method = c->method,
        .path = c->path,
        .body = c->body,
        .key = c->key,
        .secret = c->secret,
        .headers = headers,
        .http1 = c->http1,
        .source = c->source,
    };
    struct it_response r;
    IT_CHECK(it_admin_request(s, &admin, &r) == 0);
    return r;
}

static long status_of(const struct it_server *s, const struct call *c)
{
    struct it_response r = call(s, c);
    long status = r.status;
    if (status >= 400 && strstr(r.body, "\"error\"") == NULL) {
        fprintf(stderr, "error without a JSON body: %ld %s\n", status, r.body);
        status = -1;
    }
    it_response_free(&r);
    return status;
}

static bool header_is(const struct it_response *r, const char *name, const char *want)
{
    char v[512];
    if (!it_response_header(r, name, v, sizeof(v))) {
        fprintf(stderr, "missing header %s\n", name);
        return false;
    }
    if (strcmp(v, want) != 0) {
        fprintf(stderr, "%s: %s, wanted %s\n", name, v, want);
        return false;
    }
    return true;
}

/* The CSP must allow scripts from this origin only. */
static bool csp_ok(const struct it_response *r)
{
    char v[512];
    return it_response_header(r, "content-security-policy", v, sizeof(v)) &&
           strstr(v, "script-src 'self'") != NULL && strstr(v, "unsafe-inline") == NULL &&
           strstr(v, "unsafe-eval") == NULL && strstr(v, "frame-ancestors 'none'") != NULL;
}

static void check_public_routes(void)
{
    struct it_response r = call(&srv, &(struct call){.method = "GET", .path = "/"});
    IT_CHECK(r.status == 303);
    IT_CHECK(header_is(&r, "location", "/console/"));
    it_response_free(&r);

    r = call(&srv, &(struct call){.method = "GET", .path = "/console/"});
    IT_CHECK(r.status == 303);
    IT_CHECK(header_is(&r, "location", "/console/login"));
    it_response_free(&r);

    /* A stale cookie is no session: back to the login page. */
    r = call(&srv, &(struct call){
                       .method = "GET", .path = "/console/", .cookie = "sluice_session=0123abcd"});
    IT_CHECK(r.status == 303);
    it_response_free(&r);

    r = call(&srv, &(struct call){.method = "GET", .path = "/console/login", .http1 = true});
    IT_CHECK(r.status == 200);
    IT_CHECK(header_is(&r, "content-type", "text/html; charset=utf-8"));
    IT_CHECK(header_is(&r, "x-content-type-options", "nosniff"));
    IT_CHECK(csp_ok(&r));
    IT_CHECK(strstr(r.body, "<form id=\"login-form\"") != NULL);
    IT_CHECK(strstr(r.body, "<script>") == NULL); /* no inline script at all */
    it_response_free(&r);

    r = call(&srv, &(struct call){.method = "GET", .path = "/console/assets/console.js"});
    IT_CHECK(r.status == 200);
    IT_CHECK(header_is(&r, "content-type", "text/javascript; charset=utf-8"));
    IT_CHECK(csp_ok(&r));
    char etag[64], inm[100];
    IT_CHECK(it_response_header(&r, "etag", etag, sizeof(etag)) && etag[0] == '"');
    IT_CHECK(strstr(r.body, "X-Sluice-CSRF") != NULL);
    it_response_free(&r);
    snprintf(inm, sizeof(inm), "if-none-match: %s", etag);
    r = call(&srv,
             &(struct call){.method = "GET", .path = "/console/assets/console.js", .extra = inm});
    IT_CHECK(r.status == 304 && r.body_len == 0);
    it_response_free(&r);

    /* The page itself is not a public file; unknown files are 404. */
    IT_CHECK(status_of(&srv, &(struct call){.method = "GET",
                                            .path = "/console/assets/index.html"}) == 404);
    IT_CHECK(status_of(&srv, &(struct call){.method = "GET", .path = "/console/assets/nope.js"}) ==
             404);
}

/* Logs in with secret; on 200 copies the cookie's "name=value" and the
 * CSRF token out. Returns the status. */
static long login(const struct it_server *s, const char *secret, char *cookie, size_t cookie_cap,
                  char *csrf, size_t csrf_cap, char *set_cookie, size_t set_cookie_cap)
{
    char body[200];
    snprintf(body, sizeof(body), "{\"secret\": \"%s\"}", secret);
    struct it_response r =
        call(s, &(struct call){.method = "POST", .path = "/console/login", .body = body});
    long status = r.status;
    if (status == 200) {
        char sc[300];
        IT_CHECK(it_response_header(&r, "set-cookie", sc, sizeof(sc)));
        if (set_cookie != NULL) {
            snprintf(set_cookie, set_cookie_cap, "%s", sc);
        }
        size_t pair = strcspn(sc, ";");
        snprintf(cookie, cookie_cap, "%.*s", (int)pair, sc);
        const char *t = strstr(r.body, "\"csrf_token\":\"");
        IT_CHECK(t != NULL);
        if (t != NULL) {
            t += strlen("\"csrf_token\":\"");
            snprintf(csrf, csrf_cap, "%.*s", (int)strcspn(t, "\""), t);
        }
        IT_CHECK(header_is(&r, "cache-control", "no-store"));
    }
    it_response_free(&r);
    return status;
}

/* paused.enqueue of a queue object (docs/admin.md). */
static bool paused_for_enqueue(const char *body)
{
    json_t *q = json_loads(body, 0, NULL);
    bool paused = json_is_true(json_object_get(json_object_get(q, "paused"), "enqueue"));
    json_decref(q);
    return paused;
}

static bool is_hex(const char *s, size_t n)
{
    if (strlen(s) != n) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isxdigit((unsigned char)s[i])) {
            return false;
        }
    }
    return true;
}

/* The ready count of the last sample of acme/QUEUE in /console/history,
 * or -1 when the queue has none yet. */
static long last_ready(const char *body, const char *queue)
{
    json_t *h = json_loads(body, 0, NULL);
    json_t *ready = json_object_get(json_object_get(json_object_get(h, "queues"), queue), "ready");
    size_t n = json_array_size(ready);
    long v = n > 0 ? (long)json_integer_value(json_array_get(ready, n - 1)) : -1;
    json_decref(h);
    return v;
}

/* The gateway samples every queue for the console's charts: three sends
 * show in a later sample (one comes every GW_CONSOLE_HISTORY_STEP_S). */
static void check_history(const char *cookie)
{
    IT_CHECK(status_of(&srv, &(struct call){.method = "GET", .path = "/console/history"}) == 401);
    char *url = it_create_queue(&srv, "charted", NULL);
    IT_REQUIRE(url != NULL);
    for (int i = 0; i < 3; i++) {
        free(it_send(&srv, url, "sampled"));
    }
    free(url);
    long ready = -1;
    for (int i = 0; i < 300 && ready != 3; i++) { /* 15 s: three sampling steps */
        struct it_response r = call(
            &srv, &(struct call){.method = "GET", .path = "/console/history", .cookie = cookie});
        ready = r.status == 200 ? last_ready(r.body, IT_TENANT "/charted") : -2;
        it_response_free(&r);
        if (ready != 3) {
            nanosleep(&(struct timespec){0, 50000000}, NULL);
        }
    }
    IT_CHECK(ready == 3);
}

static void check_login_and_session(void)
{
    char cookie[200], csrf[100], set_cookie[300];
    IT_CHECK(login(&srv, "wrong", cookie, sizeof(cookie), csrf, sizeof(csrf), NULL, 0) == 403);
    IT_CHECK(it_wait_log(&srv, "route=\"POST /console/login\" status=403", 5000));
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/login",
                                            .body = "{\"secret\": 7}"}) == 400);
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/login",
                                            .body = "not json"}) == 400);
    /* A login body past 4 KiB is refused (before it is read, when its
     * length is declared). */
    static char big[8192];
    memset(big, ' ', sizeof(big) - 1);
    int head = snprintf(big, sizeof(big), "{\"secret\": \"x\"");
    big[head] = ' ';
    big[sizeof(big) - 2] = '}';
    IT_CHECK(status_of(&srv, &(struct call){
                                 .method = "POST", .path = "/console/login", .body = big}) == 413);
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/login",
                                            .body = big,
                                            .http1 = true}) == 413);
    /* The right secret from another site's page: no session for it. */
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/login",
                                            .body = "{\"secret\": \"" IT_ADMIN_SECRET "\"}",
                                            .origin = "https://attacker.example"}) == 403);

    IT_REQUIRE(login(&srv, IT_ADMIN_SECRET, cookie, sizeof(cookie), csrf, sizeof(csrf), set_cookie,
                     sizeof(set_cookie)) == 200);
    IT_CHECK(strncmp(cookie, "sluice_session=", 15) == 0 && is_hex(cookie + 15, 64));
    IT_CHECK(is_hex(csrf, 64));
    IT_CHECK(strstr(set_cookie, "; HttpOnly") != NULL);
    IT_CHECK(strstr(set_cookie, "; SameSite=Strict") != NULL);
    IT_CHECK(strstr(set_cookie, "; Path=/") != NULL);
    IT_CHECK(strstr(set_cookie, "; Max-Age=43200") != NULL);
    IT_CHECK(strstr(set_cookie, "Secure") ==
             NULL); /* cleartext: a Secure cookie would not come back */
    IT_CHECK(it_wait_log(&srv, "route=\"POST /console/login\" status=200", 5000));

    /* Reads with the cookie alone. */
    IT_CHECK(status_of(&srv, &(struct call){
                                 .method = "GET", .path = "/tenants", .cookie = cookie}) == 200);
    IT_CHECK(status_of(&srv,
                       &(struct call){
                           .method = "GET", .path = "/metrics", .cookie = cookie, .http1 = true}) ==
             200);
    struct it_response r =
        call(&srv, &(struct call){.method = "GET", .path = "/console/", .cookie = cookie});
    IT_CHECK(r.status == 200 && strstr(r.body, "id=\"page-dlq\"") != NULL);
    IT_CHECK(csp_ok(&r));
    it_response_free(&r);
    r = call(&srv, &(struct call){.method = "GET", .path = "/console/session", .cookie = cookie});
    IT_CHECK(r.status == 200 && strstr(r.body, csrf) != NULL);
    char audit[200] = "";
    json_t *session = json_loads(r.body, 0, NULL);
    const char *label = json_string_value(json_object_get(session, "session"));
    IT_CHECK(label != NULL && is_hex(label, 16));
    snprintf(audit, sizeof(audit),
             "principal=admin:session:%s route=\"POST /api/queues/acme/orders/pause\" status=200",
             label != NULL ? label : "?");
    json_decref(session);
    it_response_free(&r);

    /* Writes need the token, and a browser's Origin must be this one. */
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/logout",
                                            .cookie = cookie}) == 403);
    char wrong[100];
    snprintf(wrong, sizeof(wrong), "%s", csrf);
    wrong[0] = wrong[0] == 'a' ? 'b' : 'a';
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/logout",
                                            .cookie = cookie,
                                            .csrf = wrong}) == 403);
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/logout",
                                            .cookie = cookie,
                                            .csrf = csrf,
                                            .origin = "http://attacker.example"}) == 403);
    /* Those refusals did not end the session. */
    IT_CHECK(status_of(&srv, &(struct call){
                                 .method = "GET", .path = "/tenants", .cookie = cookie}) == 200);

    /* An admin API write, as the console's page makes it. */
    char *url = it_create_queue(&srv, "orders", NULL);
    IT_REQUIRE(url != NULL);
    free(url);
    const char *pause = "/api/queues/" IT_TENANT "/orders/pause";
    const char *both = "{\"enqueue\": true, \"dequeue\": true}";
    IT_CHECK(status_of(
                 &srv,
                 &(struct call){.method = "POST", .path = pause, .body = both, .cookie = cookie}) ==
             403);
    r = call(&srv, &(struct call){.method = "GET",
                                  .path = "/api/queues/" IT_TENANT "/orders",
                                  .cookie = cookie});
    IT_CHECK(r.status == 200 && !paused_for_enqueue(r.body));
    it_response_free(&r);
    r = call(&srv, &(struct call){.method = "POST",
                                  .path = pause,
                                  .body = both,
                                  .cookie = cookie,
                                  .csrf = csrf,
                                  .http1 = true});
    IT_CHECK(r.status == 200 && paused_for_enqueue(r.body));
    it_response_free(&r);
    IT_CHECK(it_wait_log(&srv, audit, 5000));
    check_history(cookie);

    char origin[80];
    snprintf(origin, sizeof(origin), "%s", srv.admin_url);
    r = call(&srv, &(struct call){.method = "POST",
                                  .path = "/console/logout",
                                  .cookie = cookie,
                                  .csrf = csrf,
                                  .origin = origin,
                                  .http1 = true});
    IT_CHECK(r.status == 200 && strstr(r.body, "\"ended\":true") != NULL);
    char cleared[300];
    IT_CHECK(it_response_header(&r, "set-cookie", cleared, sizeof(cleared)) &&
             strncmp(cleared, "sluice_session=;", 16) == 0 && strstr(cleared, "Max-Age=0") != NULL);
    it_response_free(&r);
    IT_CHECK(status_of(&srv, &(struct call){
                                 .method = "GET", .path = "/tenants", .cookie = cookie}) == 401);
    IT_CHECK(status_of(&srv, &(struct call){.method = "GET",
                                            .path = "/console/session",
                                            .cookie = cookie}) == 401);
}

static void check_keys(void)
{
    /* A tenant's valid signature is no admin's. */
    const char *paths[] = {"/console/", "/console/session", "/tenants"};
    for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
        IT_CHECK(status_of(&srv, &(struct call){.method = "GET",
                                                .path = paths[i],
                                                .key = IT_KEY,
                                                .secret = IT_SECRET}) == 403);
    }
    IT_CHECK(status_of(&srv, &(struct call){.method = "POST",
                                            .path = "/console/logout",
                                            .key = IT_KEY,
                                            .secret = IT_SECRET}) == 403);
    struct it_response r = call(&srv, &(struct call){.method = "GET",
                                                     .path = "/console/",
                                                     .key = IT_ADMIN_KEY,
                                                     .secret = IT_ADMIN_SECRET});
    IT_CHECK(r.status == 200 && strstr(r.body, "console.js") != NULL);
    it_response_free(&r);
    /* The admin's signature has no session, so no CSRF token to give. */
    IT_CHECK(status_of(&srv, &(struct call){.method = "GET",
                                            .path = "/console/session",
                                            .key = IT_ADMIN_KEY,
                                            .secret = IT_ADMIN_SECRET}) == 400);
}

static void check_rotated_secret(const struct it_options *opt)
{
    char cookie[200], csrf[100];
    IT_REQUIRE(login(&srv, IT_ADMIN_SECRET, cookie, sizeof(cookie), csrf, sizeof(csrf), NULL, 0) ==
               200);
    static char yaml[4096];
    it_config_yaml(&srv, opt, yaml, sizeof(yaml));
    char *at = strstr(yaml, "secret_access_key: " IT_ADMIN_SECRET);
    IT_REQUIRE(at != NULL);
    static char rotated[4200];
    snprintf(rotated, sizeof(rotated), "%.*ssecret_access_key: rotated-secret%s", (int)(at - yaml),
             yaml, at + strlen("secret_access_key: " IT_ADMIN_SECRET));
    IT_REQUIRE(it_server_write_config(&srv, rotated) == 0);
    it_server_signal(&srv, SIGHUP);
    /* The reload swaps the snapshot right after it logs; poll, bounded. */
    long status = 0;
    for (int i = 0; i < 100 && status != 401; i++) {
        status =
            status_of(&srv, &(struct call){.method = "GET", .path = "/tenants", .cookie = cookie});
        if (status != 401) {
            nanosleep(&(struct timespec){0, 50000000}, NULL);
        }
    }
    IT_CHECK(status == 401);
    IT_CHECK(login(&srv, "rotated-secret", cookie, sizeof(cookie), csrf, sizeof(csrf), NULL, 0) ==
             200);
    IT_CHECK(status_of(&srv, &(struct call){
                                 .method = "GET", .path = "/tenants", .cookie = cookie}) == 200);
}

/* The value of the sample named exactly series in a Prometheus text, or
 * -1. */
static double metric(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; (p = strstr(p, series)) != NULL; p += n) {
        if ((p == text || p[-1] == '\n') && p[n] == ' ') {
            return strtod(p + n + 1, NULL);
        }
    }
    return -1;
}

static void check_login_rationing(void)
{
    char cookie[200], csrf[100];
    int refused = 0;
    for (int i = 0; i < 4 * LOGIN_FAILURE_BURST && refused == 0; i++) {
        refused += login(&srv, "guess", cookie, sizeof(cookie), csrf, sizeof(csrf), NULL, 0) == 429;
    }
    IT_CHECK(refused == 1);
    /* While rationed, even the right secret is not checked. */
    IT_CHECK(login(&srv, "rotated-secret", cookie, sizeof(cookie), csrf, sizeof(csrf), NULL, 0) ==
             429);
    /* Rationing is per client address: another one logs in at once. */
    struct it_response other = call(&srv, &(struct call){.method = "POST",
                                                         .path = "/console/login",
                                                         .body = "{\"secret\": \"rotated-secret\"}",
                                                         .source = "127.0.0.2"});
    IT_CHECK(other.status == 200);
    it_response_free(&other);
    /* Refused logins count as the listener's failed authentications. */
    struct it_response r = call(&srv, &(struct call){.method = "GET",
                                                     .path = "/metrics",
                                                     .key = IT_ADMIN_KEY,
                                                     .secret = "rotated-secret"});
    IT_CHECK(r.status == 200);
    IT_CHECK(metric(r.body, "sluice_admin_auth_failures_total{outcome=\"failed\"}") >=
             LOGIN_FAILURE_BURST);
    IT_CHECK(metric(r.body, "sluice_admin_auth_failures_total{outcome=\"throttled\"}") >= 2);
    it_response_free(&r);
}

static void check_tls_cookie(void)
{
    struct it_server tls;
    struct it_options opt = {.tls = true, .admin = true};
    IT_REQUIRE(it_server_start(&tls, &opt) == 0);
    char cookie[200], csrf[100], set_cookie[300];
    IT_CHECK(login(&tls, IT_ADMIN_SECRET, cookie, sizeof(cookie), csrf, sizeof(csrf), set_cookie,
                   sizeof(set_cookie)) == 200);
    IT_CHECK(strncmp(set_cookie, "__Host-sluice_session=", 22) == 0);
    IT_CHECK(strstr(set_cookie, "; Secure") != NULL);
    IT_CHECK(status_of(&tls, &(struct call){
                                 .method = "GET", .path = "/tenants", .cookie = cookie}) == 200);
    IT_CHECK(it_server_stop(&tls) == 0);
    it_server_cleanup(&tls);
}

int main(void)
{
    struct it_options opt = {.admin = true};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    check_public_routes();
    check_login_and_session();
    check_keys();
    check_rotated_secret(&opt);
    check_login_rationing();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    check_tls_cookie();
    return it_summary();
}
