/*
 * test_sl_uuid.c -- version-4 UUIDs: sl_uuid4_from formats given bytes
 * with the version and variant bits set (so ids made from one batch of
 * random bytes are well-formed), and sl_uuid4 draws fresh ones.
 */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sl.h"

static void from_bytes_sets_version_and_variant(void **state)
{
    uint8_t ones[16], zeros[16] = {0};
    memset(ones, 0xff, sizeof ones);
    char out[37];
    sl_uuid4_from(ones, out);
    assert_string_equal(out, "ffffffff-ffff-4fff-bfff-ffffffffffff");
    sl_uuid4_from(zeros, out);
    assert_string_equal(out, "00000000-0000-4000-8000-000000000000");
    const uint8_t seq[16] = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                             0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};
    sl_uuid4_from(seq, out);
    assert_string_equal(out, "00112233-4455-4677-8899-aabbccddeeff");
}

static void fresh_ids_are_well_formed_and_differ(void **state)
{
    char a[37], b[37];
    sl_uuid4(a);
    sl_uuid4(b);
    assert_int_equal(strlen(a), 36);
    assert_string_not_equal(a, b);
    for (size_t i = 0; i < 36; i++) {
        if (i == 8 || i == 13 || i == 18 || i == 23) {
            assert_int_equal(a[i], '-');
        } else {
            assert_true(isxdigit((unsigned char)a[i]) && !isupper((unsigned char)a[i]));
        }
    }
    assert_int_equal(a[14], '4');
    assert_non_null(strchr("89ab", a[19]));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_bytes_sets_version_and_variant),
        cmocka_unit_test(fresh_ids_are_well_formed_and_differ),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
