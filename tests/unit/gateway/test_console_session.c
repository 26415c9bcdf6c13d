/*
 * test_console_session.c -- the console's session store
 * (gw_console_session.h), on a clock the test moves by hand:
 *  - a login's cookie finds its session, with the login's CSRF token;
 *    another cookie, a truncated one or an empty one finds nothing;
 *  - a session ends after GW_CONSOLE_IDLE_S unused, is kept alive by use,
 *    and ends after GW_CONSOLE_LIFETIME_S however much it is used;
 *  - logout ends it; a second logout finds nothing;
 *  - a changed admin secret ends every session opened under the old one;
 *  - past GW_CONSOLE_MAX_SESSIONS logins the least recently used ends and
 *    the others live;
 *  - the CSRF comparison accepts the token only, not a prefix, not empty.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gw_console_session.h"

#define S(x) (1000000000ull * (uint64_t)(x))
#define SECRET SL_SLICE_LIT("admin-secret")

static int find(struct gw_console_sessions *s, const char *cookie, uint64_t now,
                struct gw_console_session_view *v)
{
    return gw__console_session_find(s, sl_slice_cstr(cookie), SECRET, now, v);
}

static void test_login_finds_its_session(void **state)
{
    (void)state;
    struct gw_console_sessions *s = gw__console_sessions_new();
    struct gw_console_login a, b;
    gw__console_session_open(s, SECRET, S(10), &a);
    gw__console_session_open(s, SECRET, S(10), &b);
    assert_int_equal(strlen(a.cookie), 64);
    assert_int_equal(strlen(a.csrf), 64);
    assert_string_not_equal(a.cookie, b.cookie);
    assert_string_not_equal(a.csrf, a.cookie);

    struct gw_console_session_view v;
    assert_int_equal(find(s, a.cookie, S(11), &v), SL_OK);
    assert_string_equal(v.csrf, a.csrf);
    assert_string_equal(v.label, a.label);
    assert_int_equal(v.expires_in_s, GW_CONSOLE_IDLE_S);
    assert_int_equal(find(s, b.cookie, S(11), &v), SL_OK);
    assert_string_equal(v.csrf, b.csrf);

    char truncated[GW_CONSOLE_TOKEN_CAP];
    memcpy(truncated, a.cookie, sizeof(truncated));
    truncated[63] = '\0';
    assert_int_equal(find(s, truncated, S(11), &v), SL_ENOTFOUND);
    assert_int_equal(find(s, "", S(11), &v), SL_ENOTFOUND);
    assert_int_equal(find(s, a.csrf, S(11), &v), SL_ENOTFOUND);
    assert_int_equal(gw__console_sessions_live(s, S(11)), 2);
    gw__console_sessions_free(s);
}

static void test_idle_and_lifetime_expiry(void **state)
{
    (void)state;
    struct gw_console_sessions *s = gw__console_sessions_new();
    struct gw_console_login idle, busy;
    uint64_t t0 = S(100);
    gw__console_session_open(s, SECRET, t0, &idle);
    gw__console_session_open(s, SECRET, t0, &busy);
    struct gw_console_session_view v;

    /* Used every half idle period, busy lives; idle dies at its limit. */
    uint64_t t = t0;
    for (int i = 0; i < 3; i++) {
        t += S(GW_CONSOLE_IDLE_S / 2);
        assert_int_equal(find(s, busy.cookie, t, &v), SL_OK);
    }
    assert_int_equal(find(s, idle.cookie, t, &v), SL_ENOTFOUND);
    /* Once ended it stays ended. */
    assert_int_equal(find(s, idle.cookie, t0, &v), SL_ENOTFOUND);

    /* Near the end of its lifetime, what is left is less than idle. */
    while (t + S(GW_CONSOLE_IDLE_S / 2) < t0 + S(GW_CONSOLE_LIFETIME_S)) {
        t += S(GW_CONSOLE_IDLE_S / 2);
        assert_int_equal(find(s, busy.cookie, t, &v), SL_OK);
    }
    assert_true(v.expires_in_s <= GW_CONSOLE_IDLE_S / 2);
    assert_int_equal(find(s, busy.cookie, t0 + S(GW_CONSOLE_LIFETIME_S), &v), SL_ENOTFOUND);
    assert_int_equal(gw__console_sessions_live(s, t0 + S(GW_CONSOLE_LIFETIME_S)), 0);
    gw__console_sessions_free(s);
}

static void test_logout_ends_session(void **state)
{
    (void)state;
    struct gw_console_sessions *s = gw__console_sessions_new();
    struct gw_console_login a, b;
    gw__console_session_open(s, SECRET, S(1), &a);
    gw__console_session_open(s, SECRET, S(1), &b);
    assert_int_equal(gw__console_session_close(s, sl_slice_cstr(a.cookie)), SL_OK);
    assert_int_equal(gw__console_session_close(s, sl_slice_cstr(a.cookie)), SL_ENOTFOUND);
    struct gw_console_session_view v;
    assert_int_equal(find(s, a.cookie, S(2), &v), SL_ENOTFOUND);
    assert_int_equal(find(s, b.cookie, S(2), &v), SL_OK);
    gw__console_sessions_free(s);
}

static void test_rotated_secret_ends_sessions(void **state)
{
    (void)state;
    struct gw_console_sessions *s = gw__console_sessions_new();
    struct gw_console_login a;
    gw__console_session_open(s, SECRET, S(1), &a);
    struct gw_console_session_view v;
    assert_int_equal(gw__console_session_find(s, sl_slice_cstr(a.cookie),
                                              SL_SLICE_LIT("rotated-secret"), S(2), &v),
                     SL_ENOTFOUND);
    /* Going back to the old secret does not revive it. */
    assert_int_equal(find(s, a.cookie, S(3), &v), SL_ENOTFOUND);
    gw__console_sessions_free(s);
}

static void test_full_store_ends_least_recently_used(void **state)
{
    (void)state;
    struct gw_console_sessions *s = gw__console_sessions_new();
    static struct gw_console_login logins[GW_CONSOLE_MAX_SESSIONS];
    struct gw_console_session_view v;
    for (size_t i = 0; i < GW_CONSOLE_MAX_SESSIONS; i++) {
        gw__console_session_open(s, SECRET, S(10 + i), &logins[i]);
    }
    /* The first login is used again, so the second is now the oldest. */
    assert_int_equal(find(s, logins[0].cookie, S(1000), &v), SL_OK);
    struct gw_console_login extra;
    gw__console_session_open(s, SECRET, S(1001), &extra);
    assert_int_equal(find(s, logins[1].cookie, S(1002), &v), SL_ENOTFOUND);
    assert_int_equal(find(s, logins[0].cookie, S(1002), &v), SL_OK);
    assert_int_equal(find(s, extra.cookie, S(1002), &v), SL_OK);
    for (size_t i = 2; i < GW_CONSOLE_MAX_SESSIONS; i++) {
        assert_int_equal(find(s, logins[i].cookie, S(1002), &v), SL_OK);
    }
    assert_int_equal(gw__console_sessions_live(s, S(1002)), GW_CONSOLE_MAX_SESSIONS);
    gw__console_sessions_free(s);
}

static void test_csrf_equal(void **state)
{
    (void)state;
    const char *token = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
    assert_true(gw__console_csrf_equal(token, sl_slice_cstr(token)));
    assert_false(gw__console_csrf_equal(token, (struct sl_slice){token, 63}));
    assert_false(gw__console_csrf_equal(token, SL_SLICE_LIT("")));
    assert_false(gw__console_csrf_equal("", SL_SLICE_LIT("")));
    char flipped[65];
    memcpy(flipped, token, sizeof(flipped));
    flipped[40] = 'X';
    assert_false(gw__console_csrf_equal(token, sl_slice_cstr(flipped)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_login_finds_its_session),
        cmocka_unit_test(test_idle_and_lifetime_expiry),
        cmocka_unit_test(test_logout_ends_session),
        cmocka_unit_test(test_rotated_secret_ends_sessions),
        cmocka_unit_test(test_full_store_ends_least_recently_used),
        cmocka_unit_test(test_csrf_equal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
