/*
 * test_peer_ration.c -- the per-address meters of gw_peer_ration.h, on a
 * clock the test moves by hand:
 *  - an address spends its burst and is refused; another address is not;
 *  - a refused address is allowed again after the refill;
 *  - with every slot taken, a new address evicts a meter that is full
 *    again before any that still owes, and otherwise the one charged
 *    least recently; the evicted address starts afresh, the others keep
 *    what they owe;
 *  - an IPv6 client is metered by its /64: its other addresses share its
 *    meter, another /64 does not, and IPv4 addresses (mapped into the
 *    same first 64 bits) stay apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gw_peer_ration.h"

#define S(x) (1000000000ull * (uint64_t)(x))

static void addr(uint8_t out[16], uint8_t last)
{
    static const uint8_t v4_mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
    memcpy(out, v4_mapped, 12);
    out[12] = 127;
    out[13] = 0;
    out[14] = 0;
    out[15] = last;
}

static void spend(struct gw_peer_ration *r, const uint8_t a[16], int n, uint64_t now)
{
    for (int i = 0; i < n; i++) {
        gw__peer_ration_charge(r, a, now);
    }
}

static void test_one_address_does_not_ration_another(void **state)
{
    (void)state;
    struct gw_peer_ration *r = gw__peer_ration_new(1, 3, 8);
    uint8_t a[16], b[16];
    addr(a, 1);
    addr(b, 2);
    assert_true(gw__peer_ration_allowed(r, a, S(100)));
    spend(r, a, 3, S(100));
    assert_false(gw__peer_ration_allowed(r, a, S(100)));
    assert_true(gw__peer_ration_allowed(r, b, S(100)));
    /* one event a second comes back */
    assert_true(gw__peer_ration_allowed(r, a, S(101)));
    gw__peer_ration_charge(r, a, S(101));
    assert_false(gw__peer_ration_allowed(r, a, S(101)));
    gw__peer_ration_free(r);
}

static void test_eviction_prefers_full_then_oldest(void **state)
{
    (void)state;
    struct gw_peer_ration *r = gw__peer_ration_new(1, 2, 3);
    uint8_t a[16], b[16], c[16], d[16], e[16];
    addr(a, 1);
    addr(b, 2);
    addr(c, 3);
    addr(d, 4);
    addr(e, 5);
    spend(r, a, 2, S(100)); /* owes until 102 */
    spend(r, b, 1, S(100)); /* full again at 101 */
    spend(r, c, 2, S(100));
    assert_false(gw__peer_ration_allowed(r, a, S(100)));
    assert_false(gw__peer_ration_allowed(r, c, S(100)));
    /* At 101 b's meter is full again: d takes it; a and c still owe. */
    spend(r, d, 2, S(101));
    assert_false(gw__peer_ration_allowed(r, d, S(101)));
    assert_true(gw__peer_ration_allowed(r, a, S(101))); /* one of two back */
    gw__peer_ration_charge(r, a, S(101));
    assert_false(gw__peer_ration_allowed(r, a, S(101)));
    assert_false(gw__peer_ration_allowed(r, c, S(100)));
    /* Nobody is full at 101: e evicts the least recently charged, c. */
    spend(r, e, 2, S(101));
    assert_false(gw__peer_ration_allowed(r, e, S(101)));
    assert_true(gw__peer_ration_allowed(r, c, S(101))); /* forgotten: fresh */
    assert_false(gw__peer_ration_allowed(r, a, S(101)));
    assert_false(gw__peer_ration_allowed(r, d, S(101)));
    gw__peer_ration_free(r);
}

static void v6(uint8_t out[16], uint8_t net, uint8_t host)
{
    memset(out, 0, 16);
    out[0] = 0x20;
    out[1] = 0x01;
    out[2] = 0x0d;
    out[3] = 0xb8;
    out[7] = net;
    out[15] = host;
}

static void test_ipv6_by_prefix(void **state)
{
    (void)state;
    struct gw_peer_ration *r = gw__peer_ration_new(1, 3, 8);
    uint8_t a1[16], a2[16], other[16], v4a[16], v4b[16];
    v6(a1, 1, 1);
    v6(a2, 1, 0xfe);
    v6(other, 2, 1);
    spend(r, a1, 3, S(100));
    assert_false(gw__peer_ration_allowed(r, a1, S(100)));
    assert_false(gw__peer_ration_allowed(r, a2, S(100))); /* same /64 */
    assert_true(gw__peer_ration_allowed(r, other, S(100)));
    addr(v4a, 1);
    addr(v4b, 2);
    spend(r, v4a, 3, S(100));
    assert_false(gw__peer_ration_allowed(r, v4a, S(100)));
    assert_true(gw__peer_ration_allowed(r, v4b, S(100)));
    gw__peer_ration_free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_address_does_not_ration_another),
        cmocka_unit_test(test_eviction_prefers_full_then_oldest),
        cmocka_unit_test(test_ipv6_by_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
