/*
 * gw_json_load.h -- (gateway-internal) the SQS JSON protocol's request
 * parser (gw_json_load.c): the jansson document json_loadb(body, n,
 * JSON_ALLOW_NUL, err) returns, built faster.
 *
 * Why: jansson's lexer reads a string one character at a time through
 * its stream and buffer layers, about 44 MB/s on this project's machines:
 * 240 µs for a SendMessageBatch of ten 1 KiB messages, most of what such a
 * request costs the gateway. cJSON (Debian's libcjson-dev) parses the same
 * body in 16 µs. The decoders above stay on jansson's document, and so
 * does every error: cJSON is used only where its answer is sure to be the
 * document jansson would build (the cases are listed in gw_json_load.c),
 * and any other body -- and any body cJSON refuses -- is parsed by
 * jansson, whose document or error is then returned.
 * tests/fuzz/fuzz_json_load.c checks the equivalence on arbitrary input.
 *
 * Threading: any thread (neither library keeps state between calls).
 */
#ifndef SLUICE_GW_JSON_LOAD_H
#define SLUICE_GW_JSON_LOAD_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

/* The document of the n bytes at p (a new reference), or NULL with *err
 * filled as json_loadb fills it. */
json_t *gw__json_load(const char *p, size_t n, json_error_t *err);

/* True when the n bytes at p hold anything cJSON might read differently
 * from jansson (the list is in gw_json_load.c): such a body goes straight
 * to jansson. Exposed for tests. */
bool gw__json_needs_jansson(const char *p, size_t n);

#endif
