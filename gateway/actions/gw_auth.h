/*
 * gw_auth.h -- (gateway-internal) SigV4 over a request as the protocol
 * layer delivers it (gw_auth.c): the one place that turns a struct
 * gw_request into what the sigv4 module verifies. The SQS API (gw_api.c)
 * and the admin listener (gw_admin.c) both authenticate through it, each
 * with its own way of finding a secret.
 */
#ifndef SLUICE_GW_AUTH_H
#define SLUICE_GW_AUTH_H

#include "gw_http.h"
#include "sigv4.h"

/* Verifies req's signature against v (region, clock, key cache, secret
 * lookup). Returns SL_OK, or what sigv4_authenticate returns, with
 * *failure and *why (may be NULL) set as it sets them. */
int gw__auth_sigv4(const struct gw_request *req, const struct sigv4_verifier *v,
                   enum sigv4_failure *failure, const char **why);

#endif
