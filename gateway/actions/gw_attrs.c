/*
 * gw_attrs.c -- the stored form of message attributes (gw_act.h): the
 * byte layout SQS hashes for MD5OfMessageAttributes, written at send and
 * read back at receive.
 */
#include "gw_act.h"

#include <string.h>

static void put_u32(struct sl_buf *out, size_t v)
{
    uint8_t b[4] = {(uint8_t)(v >> 24), (uint8_t)(v >> 16), (uint8_t)(v >> 8), (uint8_t)v};
    sl_buf_append(out, b, sizeof b);
}

static bool get_u32(struct sl_slice *in, size_t *v)
{
    if (in->n < 4) {
        return false;
    }
    const uint8_t *b = (const uint8_t *)in->p;
    *v = (size_t)b[0] << 24 | (size_t)b[1] << 16 | (size_t)b[2] << 8 | (size_t)b[3];
    in->p += 4;
    in->n -= 4;
    return true;
}

static bool get_bytes(struct sl_slice *in, struct sl_slice *out)
{
    size_t n;
    if (!get_u32(in, &n) || n > in->n) {
        return false;
    }
    out->p = in->p;
    out->n = n;
    in->p += n;
    in->n -= n;
    return true;
}

void gw__attrs_encode(const struct gw_sqs_msg_attr *attrs, size_t n, struct sl_buf *out)
{
    for (size_t i = 0; i < n; i++) {
        put_u32(out, attrs[i].name.n);
        sl_buf_append(out, attrs[i].name.p, attrs[i].name.n);
        put_u32(out, attrs[i].data_type.n);
        sl_buf_append(out, attrs[i].data_type.p, attrs[i].data_type.n);
        sl_buf_append_byte(out, attrs[i].type == GW_SQS_ATTR_BINARY ? 2 : 1);
        put_u32(out, attrs[i].value.n);
        sl_buf_append(out, attrs[i].value.p, attrs[i].value.n);
    }
}

int gw__attrs_decode(struct sl_slice blob, struct gw_sqs_msg_attr *out, size_t cap)
{
    size_t n = 0;
    while (blob.n > 0) {
        if (n == cap) {
            return SL_EINVAL;
        }
        struct gw_sqs_msg_attr *a = &out[n];
        if (!get_bytes(&blob, &a->name) || !get_bytes(&blob, &a->data_type) || blob.n < 1) {
            return SL_EINVAL;
        }
        uint8_t transport = (uint8_t)blob.p[0];
        blob.p++;
        blob.n--;
        if (!get_bytes(&blob, &a->value)) {
            return SL_EINVAL;
        }
        if (transport == 2) {
            a->type = GW_SQS_ATTR_BINARY;
        } else if (a->data_type.n >= 6 && memcmp(a->data_type.p, "Number", 6) == 0) {
            a->type = GW_SQS_ATTR_NUMBER;
        } else {
            a->type = GW_SQS_ATTR_STRING;
        }
        n++;
    }
    return (int)n;
}
