/*
 * ctl_client.h -- sluicectl's client: one AWS JSON 1.0 call to the SQS
 * API, or one request to the admin API (docs/admin.md), over HTTP/2
 * (libcurl: h2c with prior knowledge for http://, h2 over TLS for
 * https://, verified against --cacert when given), signed by sigv4/, the
 * signer that shares its canonical request with the gateway's verifier
 * (or, on the admin API, with a bearer token when one is configured).
 *
 * Threading: one thread. Ownership: a struct ctl_reply owns its body and
 * parsed JSON until ctl_reply_free().
 */
#ifndef SLUICE_CTL_CLIENT_H
#define SLUICE_CTL_CLIENT_H

#include <stdbool.h>

#include <jansson.h>

struct ctl_endpoint {
    const char *url;       /* the SQS API: http[s]://HOST:PORT */
    const char *admin_url; /* the admin API: http[s]://HOST:PORT */
    const char *access_key_id;
    const char *secret;
    const char *region;
    const char *admin_token; /* NULL: sign admin requests with the keys */
    const char *cacert;      /* PEM bundle to verify TLS with; NULL: the system's */
    long timeout_ms;
};

struct ctl_reply {
    long status;         /* HTTP status; 0 when no reply arrived */
    char *body;          /* raw body, NUL-terminated (malloc'd; may be NULL) */
    json_t *json;        /* parsed body, or NULL */
    char code[128];      /* error code (x-amzn-query-error, else __type's suffix) */
    const char *message; /* error message (borrows json), or transport error */
    char transport[256]; /* why no reply arrived */
    long retry_after_ms; /* the reply's Retry-After (delay-seconds form); 0: none */
};

/* POSTs AmazonSQS.<action> with req (stolen; NULL = {}). Returns true for
 * a 2xx reply; otherwise fills code and message. */
bool ctl_call(const struct ctl_endpoint *ep, const char *action, json_t *req,
              struct ctl_reply *out);
/* method ("GET" / "POST") path (with any query) on the admin API, with
 * body (stolen; NULL: none). Returns true for a 2xx reply; otherwise
 * fills code and message from the admin error shape. */
bool ctl_admin(const struct ctl_endpoint *ep, const char *method, const char *path, json_t *body,
               struct ctl_reply *out);
void ctl_reply_free(struct ctl_reply *r);

#endif
