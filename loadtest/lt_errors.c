/*
 * lt_errors.c -- which SQS error a reply carries, and a small tally of
 * errors by code for the report.
 *
 * SQS JSON errors name their code twice: `__type` in the body (the shape id,
 * e.g. "com.amazonaws.sqs#QueueDoesNotExist") and the x-amzn-query-error
 * header ("AWS.SimpleQueueService.NonExistentQueue;Sender"). The shape name
 * is what the AWS SDK for JavaScript reports, so it wins when present.
 * Query-protocol errors carry it in XML,
 * <ErrorResponse><Error><Code>AWS.SimpleQueueService.NonExistentQueue</Code>,
 * the code query clients report.
 *
 * Pure; threading: none.
 */
#include "lt_int.h"

#include <string.h>

#include <jansson.h>

static void copy_code(char *out, size_t cap, const char *p, size_t n)
{
    if (n >= cap) {
        n = cap - 1;
    }
    memcpy(out, p, n);
    out[n] = '\0';
}

void lt_error_code(int status, const char *query_error, struct sl_slice body, char *out, size_t cap)
{
    SL_ASSERT(cap > 0);
    if (status == 0) {
        copy_code(out, cap, "transport", strlen("transport"));
        if (body.n > 0) {
            size_t used = strlen(out);
            if (used + 1 < cap) {
                out[used++] = ':';
                copy_code(out + used, cap - used, body.p, body.n);
            }
        }
        return;
    }
    if (body.n > 0 && body.p[0] == '<') {
        const char *cur = body.p;
        struct sl_slice err;
        struct sl_buf code;
        sl_buf_init(&code);
        if (lt_xml_next(&cur, body.p + body.n, "Error", &err) == SL_OK &&
            lt_xml_child_text(err, "Code", &code) == SL_OK && code.n > 0) {
            copy_code(out, cap, code.p, code.n);
            sl_buf_free(&code);
            return;
        }
        sl_buf_free(&code);
    } else if (body.n > 0) {
        json_t *root = json_loadb(body.p, body.n, 0, NULL);
        const char *type = root ? json_string_value(json_object_get(root, "__type")) : NULL;
        if (type != NULL && type[0] != '\0') {
            const char *hash = strrchr(type, '#');
            const char *name = hash ? hash + 1 : type;
            copy_code(out, cap, name, strlen(name));
            json_decref(root);
            return;
        }
        json_decref(root);
    }
    if (query_error != NULL && query_error[0] != '\0') {
        const char *semi = strchr(query_error, ';');
        copy_code(out, cap, query_error, semi ? (size_t)(semi - query_error) : strlen(query_error));
        return;
    }
    snprintf(out, cap, "HTTP_%d", status);
}

void lt_errors_add(struct lt_errors *e, const char *code)
{
    for (size_t i = 0; i < e->n; i++) {
        if (strcmp(e->e[i].code, code) == 0) {
            e->e[i].n++;
            return;
        }
    }
    if (e->n == LT_MAX_ERROR_CODES) {
        e->other++;
        return;
    }
    copy_code(e->e[e->n].code, sizeof(e->e[e->n].code), code, strlen(code));
    e->e[e->n].n = 1;
    e->n++;
}

uint64_t lt_errors_total(const struct lt_errors *e)
{
    uint64_t t = e->other;
    for (size_t i = 0; i < e->n; i++) {
        t += e->e[i].n;
    }
    return t;
}
