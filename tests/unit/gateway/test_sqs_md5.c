/*
 * test_sqs_md5.c -- MD5OfMessageBody / MD5OfMessageAttributes /
 * MD5OfMessageSystemAttributes against every vector of
 * the Amazon SQS Developer Guide ("Calculating the MD5 message digest for
 * message attributes"), and the receive-side attribute filter.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "gw_sqs.h"

static struct gw_sqs_msg_attr str_attr(const char *name, const char *value)
{
    return (struct gw_sqs_msg_attr){sl_slice_cstr(name), SL_SLICE_LIT("String"), GW_SQS_ATTR_STRING,
                                    sl_slice_cstr(value)};
}

static void expect_md5(const struct gw_sqs_msg_attr *a, size_t n, const char *want)
{
    char out[33];
    assert_int_equal(gw_sqs_md5_of_attrs(a, n, out), SL_OK);
    assert_string_equal(out, want);
}

static void test_body_md5(void **state)
{
    (void)state;
    char out[33];
    gw_sqs_md5_hex("message", 7, out);
    assert_string_equal(out, "78e731027d8fd50ed642340b7c9a63b3");
    gw_sqs_md5_hex("message-1", 9, out);
    assert_string_equal(out, "3d6b824fd8c1520e9a047d21fee6fb1f");
}

static void test_attribute_vectors(void **state)
{
    (void)state;
    struct gw_sqs_msg_attr a[3] = {
        str_attr("attribName1", "attribValue 1"),
        {SL_SLICE_LIT("customNumberTypeAttrib"), SL_SLICE_LIT("Number.float"), GW_SQS_ATTR_NUMBER,
         SL_SLICE_LIT("4563442423554324324264524243.32543234")},
        {SL_SLICE_LIT("binaryAttribute"), SL_SLICE_LIT("Binary"), GW_SQS_ATTR_BINARY,
         SL_SLICE_LIT("Hello binary world!")},
    };
    expect_md5(&a[0], 1, "19e27d4e946b072f3f58da80d94fd778");
    expect_md5(&a[1], 1, "9fe1b90bbd9965bdf77bac517c7d2495");
    expect_md5(&a[2], 1, "31a92b15d92f8db860eda32aceb656c3");
    expect_md5(a, 3, "c932db14a896c663f83c260297d594ff");
    struct gw_sqs_msg_attr mine = str_attr("MyAttribute", "foobar");
    expect_md5(&mine, 1, "adb59cd4678ea5a855436b949cd07ab6");
}

static void test_filtered_vectors(void **state)
{
    (void)state;
    /* unsorted on purpose: the digest sorts by name */
    struct gw_sqs_msg_attr all[3] = {
        str_attr("Help.Me", "Me"),
        str_attr("Hello", "There"),
        str_attr("General", "Kenobi"),
    };
    expect_md5(all, 3, "4c360f3fdafd970e05fae2f149d997f5");

    static const struct {
        const char *filters[3];
        size_t n;
        const char *md5;
        size_t selected;
    } cases[] = {
        {{"General", "Hello"}, 2, "fca026605781cb4126a1e9044df24232", 2},
        {{"Hello"}, 1, "a311262e065454b75da111d535b8dacd", 1},
        {{"Hel.*"}, 1, "83fee93c1bcd8b9a5a923ffacdc636c7", 2},
        {{"All"}, 1, "4c360f3fdafd970e05fae2f149d997f5", 3},
        {{".*"}, 1, "4c360f3fdafd970e05fae2f149d997f5", 3},
    };
    for (size_t c = 0; c < SL_ARRAY_LEN(cases); c++) {
        struct sl_slice f[3];
        for (size_t i = 0; i < cases[c].n; i++) {
            f[i] = sl_slice_cstr(cases[c].filters[i]);
        }
        struct gw_sqs_msg_attr sel[3];
        size_t k = 0;
        for (size_t i = 0; i < 3; i++) {
            if (gw_sqs_attr_filter_match(f, cases[c].n, all[i].name)) {
                sel[k++] = all[i];
            }
        }
        assert_int_equal(k, cases[c].selected);
        expect_md5(sel, k, cases[c].md5);
    }
    struct sl_slice none = SL_SLICE_LIT("Other");
    assert_false(gw_sqs_attr_filter_match(&none, 1, SL_SLICE_LIT("Hello")));
    assert_false(gw_sqs_attr_filter_match(NULL, 0, SL_SLICE_LIT("Hello")));
}

static void test_system_attribute_md5(void **state)
{
    (void)state;
    char a[33], b[33];
    gw_sqs_md5_of_trace_header(SL_SLICE_LIT("Root=1-5759e988-bd862e3fe1be46a994272793"), a);
    struct gw_sqs_msg_attr t =
        str_attr("AWSTraceHeader", "Root=1-5759e988-bd862e3fe1be46a994272793");
    assert_int_equal(gw_sqs_md5_of_attrs(&t, 1, b), SL_OK);
    assert_string_equal(a, b);
    assert_int_equal(gw_sqs_md5_of_attrs(&t, 0, b), SL_EINVAL);
}

static void test_send_result_digest(void **state)
{
    (void)state;
    struct gw_sqs_msg_attr attr = str_attr("MyAttribute", "foobar");
    struct gw_sqs_send_entry e = {.body = SL_SLICE_LIT("message"), .attrs = &attr, .attr_count = 1};
    struct gw_sqs_send_result res;
    gw_sqs_send_result_digest(&e, &res);
    assert_string_equal(res.md5_of_body, "78e731027d8fd50ed642340b7c9a63b3");
    assert_string_equal(res.md5_of_attrs, "adb59cd4678ea5a855436b949cd07ab6");
    assert_string_equal(res.md5_of_sys_attrs, "");
    e.attr_count = 0;
    e.has_trace_header = true;
    e.trace_header = SL_SLICE_LIT("x");
    gw_sqs_send_result_digest(&e, &res);
    assert_string_equal(res.md5_of_attrs, "");
    assert_int_equal(strlen(res.md5_of_sys_attrs), 32);
}

/* The digests stored at send read back equal to what hashing the message
 * gives, and a send result filled from them equals one hashed anew. */
static void test_stored_digests(void **state)
{
    (void)state;
    struct gw_sqs_msg_attr attrs[3] = {
        str_attr("Help.Me", "Me"),
        str_attr("Hello", "There"),
        str_attr("General", "Kenobi"),
    };
    struct gw_sqs_send_entry e = {.body = SL_SLICE_LIT("message"), .attrs = attrs, .attr_count = 3};
    struct gw_sqs_digests d, back;
    gw_sqs_digests_of(&e, &d);
    assert_int_equal(d.n, 2 * GW_SQS_MD5_LEN);
    assert_true(gw_sqs_digests_read((struct sl_slice){(const char *)d.bytes, d.n}, &back));
    assert_int_equal(back.n, d.n);
    char hex[33];
    sl_hex_encode(back.bytes, GW_SQS_MD5_LEN, hex);
    assert_string_equal(hex, "78e731027d8fd50ed642340b7c9a63b3");
    sl_hex_encode(gw_sqs_digests_attrs(&back), GW_SQS_MD5_LEN, hex);
    assert_string_equal(hex, "4c360f3fdafd970e05fae2f149d997f5");
    struct gw_sqs_send_result from_stored, hashed;
    gw_sqs_send_result_fill(&e, &back, &from_stored);
    gw_sqs_send_result_digest(&e, &hashed);
    assert_string_equal(from_stored.md5_of_body, hashed.md5_of_body);
    assert_string_equal(from_stored.md5_of_attrs, hashed.md5_of_attrs);

    /* no attributes: the body's digest only */
    e.attr_count = 0;
    gw_sqs_digests_of(&e, &d);
    assert_int_equal(d.n, GW_SQS_MD5_LEN);
    assert_true(gw_sqs_digests_read((struct sl_slice){(const char *)d.bytes, d.n}, &back));
    assert_null(gw_sqs_digests_attrs(&back));
    gw_sqs_send_result_fill(&e, &back, &from_stored);
    assert_string_equal(from_stored.md5_of_body, "78e731027d8fd50ed642340b7c9a63b3");
    assert_string_equal(from_stored.md5_of_attrs, "");

    /* nothing stored (a message from before schema 2), or a form this
     * build does not know: hash instead */
    assert_false(gw_sqs_digests_read((struct sl_slice){NULL, 0}, &back));
    assert_false(gw_sqs_digests_read((struct sl_slice){(const char *)d.bytes, 15}, &back));
    assert_false(gw_sqs_digests_read((struct sl_slice){(const char *)d.bytes, 17}, &back));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_body_md5),           cmocka_unit_test(test_attribute_vectors),
        cmocka_unit_test(test_filtered_vectors),   cmocka_unit_test(test_system_attribute_md5),
        cmocka_unit_test(test_send_result_digest), cmocka_unit_test(test_stored_digests),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
