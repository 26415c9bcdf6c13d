/*
 * fuzz_gw_console.c -- what a browser hands the console's session check:
 * the Cookie headers (split or not), the CSRF header, the Origin, the
 * method, with or without an Authorization header beside them.
 *
 * Input: a flags byte, then up to four fields separated by '\n': text
 * before the cookie, text after it, the CSRF header, the Origin. Flag bits:
 * 1 put the live session's cookie between the first two fields (else only
 * the fuzzed text), 2 send the live CSRF token after the fuzzed one's
 * text (else the fuzzed text alone), 4 a POST (else GET), 8 an
 * Authorization header, 16 split the cookie text into two headers at its
 * middle.
 *
 * What must hold: a request with Authorization is never the console's; a
 * cookie found lies inside a Cookie header and holds no ';'; a refusal is
 * 401 or 403 with a message; a pass names the session's principal and, on
 * a write, was only possible with the exact CSRF token and a same-origin
 * or absent Origin.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cfg.h"
#include "gw_console.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gw_console *console;
static struct cfg_snapshot snap;
static struct gw_console_login live;

static void setup(void)
{
    if (console != NULL) {
        return;
    }
    console = gw__console_new(NULL, NULL);
    snap.admin.secret_access_key = "admin-secret";
    gw__console_open(console, &snap, sl_mono_ns(), &live);
}

/* The next '\n'-separated field of [*p, end). */
static struct sl_slice field(const char **p, const char *end)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    const char *stop = nl != NULL ? nl : end;
    struct sl_slice f = {*p, (size_t)(stop - *p)};
    *p = nl != NULL ? nl + 1 : end;
    return f;
}

static bool inside_any(struct sl_slice v, const struct gw_header *h, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (v.p >= h[i].value.p && v.p + v.n <= h[i].value.p + h[i].value.n) {
            return true;
        }
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    if (size == 0) {
        return 0;
    }
    unsigned flags = data[0];
    const char *p = (const char *)data + 1, *end = (const char *)data + size;
    struct sl_slice before = field(&p, end), after = field(&p, end);
    struct sl_slice csrf_in = field(&p, end), origin = field(&p, end);

    struct sl_buf cookie, csrf;
    sl_buf_init(&cookie);
    sl_buf_init(&csrf);
    sl_buf_append(&cookie, before.p, before.n);
    if (flags & 1) {
        sl_buf_append_cstr(&cookie, "sluice_session=");
        sl_buf_append_cstr(&cookie, live.cookie);
    }
    sl_buf_append(&cookie, after.p, after.n);
    sl_buf_append(&csrf, csrf_in.p, csrf_in.n);
    if (flags & 2) {
        sl_buf_append_cstr(&csrf, live.csrf);
    }

    struct gw_header h[6];
    size_t n = 0;
    size_t half = (flags & 16) ? cookie.n / 2 : cookie.n;
    h[n++] = (struct gw_header){SL_SLICE_LIT("cookie"), {cookie.p ? cookie.p : "", half}};
    if (flags & 16) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("cookie"), {cookie.p + half, cookie.n - half}};
    }
    h[n++] =
        (struct gw_header){SL_SLICE_LIT(GW_CONSOLE_CSRF_HEADER), {csrf.p ? csrf.p : "", csrf.n}};
    if (origin.n > 0) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("origin"), origin};
    }
    if (flags & 8) {
        h[n++] = (struct gw_header){SL_SLICE_LIT("authorization"), SL_SLICE_LIT("Bearer x")};
    }
    bool post = (flags & 4) != 0;
    struct gw_request req = {
        .method = post ? SL_SLICE_LIT("POST") : SL_SLICE_LIT("GET"),
        .path = SL_SLICE_LIT("/api/queues"),
        .authority = SL_SLICE_LIT("127.0.0.1:9325"),
        .scheme = SL_SLICE_LIT("http"),
        .headers = h,
        .header_count = n,
    };

    struct sl_slice found = {"", 0};
    if (gw__console_cookie(&req, &found)) {
        SL_ASSERT(inside_any(found, h, n));
        SL_ASSERT(memchr(found.p, ';', found.n) == NULL);
    }
    struct gw_console_verdict v = {.principal = ""};
    enum gw_console_auth a = gw__console_authenticate(console, &snap, &req, &v);
    if (flags & 8) {
        SL_ASSERT(a == GW_CONSOLE_AUTH_NONE);
    }
    if (a == GW_CONSOLE_AUTH_REFUSED) {
        SL_ASSERT((v.status == 401 || v.status == 403) && v.message != NULL);
    } else if (a == GW_CONSOLE_AUTH_OK) {
        SL_ASSERT(strncmp(v.principal, "admin:session:", 14) == 0);
        SL_ASSERT(sl_slice_eq_cstr(found, live.cookie));
        if (post) {
            SL_ASSERT(sl_slice_eq_cstr((struct sl_slice){csrf.p, csrf.n}, live.csrf));
            SL_ASSERT(origin.n == 0 || sl_slice_eq_cstr(origin, "http://127.0.0.1:9325"));
        }
    }
    sl_buf_free(&cookie);
    sl_buf_free(&csrf);
    return 0;
}
