/*
 * ctl_client.h -- sluicectl's SQS client: one AWS JSON 1.0 call over
 * HTTP/2 (libcurl: h2c with prior knowledge for http://, h2 over TLS for
 * https://), signed by sigv4/ (sigv4_sign_sqs_request), the signer that
 * shares its canonical request with the gateway's verifier.
 *
 * Threading: one thread. Ownership: a struct ctl_reply owns its body and
 * parsed JSON until ctl_reply_free().
 */
#ifndef SLUICE_CTL_CLIENT_H
#define SLUICE_CTL_CLIENT_H

#include <stdbool.h>

#include <jansson.h>

struct ctl_endpoint {
    const char *url; /* http[s]://HOST:PORT */
    const char *access_key_id;
    const char *secret;
    const char *region;
    long timeout_ms;
};

struct ctl_reply {
    long status;         /* HTTP status; 0 when no reply arrived */
    char *body;          /* raw body, NUL-terminated (malloc'd; may be NULL) */
    json_t *json;        /* parsed body, or NULL */
    char code[128];      /* error code (x-amzn-query-error, else __type's suffix) */
    const char *message; /* error message (borrows json), or transport error */
    char transport[256]; /* why no reply arrived */
};

/* POSTs AmazonSQS.<action> with req (stolen; NULL = {}). Returns true for
 * a 2xx reply; otherwise fills code and message. */
bool ctl_call(const struct ctl_endpoint *ep, const char *action, json_t *req,
              struct ctl_reply *out);
void ctl_reply_free(struct ctl_reply *r);

#endif
