/*
 * gen_gw_h2_corpus.c -- writes the seed corpus of fuzz_gw_h2 (recorded nghttp2
 * client sessions) into the directory given. Not part of the build:
 *   cc -o gen tests/fuzz/tools/gen_gw_h2_corpus.c -lnghttp2 && ./gen tests/fuzz/corpora/gw_h2
 */
#include <nghttp2/nghttp2.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#define NV(n, v)                                                                                   \
    {                                                                                              \
        (uint8_t *)(n), (uint8_t *)(v), strlen(n), strlen(v), NGHTTP2_NV_FLAG_NONE                 \
    }
static const char *body_text;
static size_t body_len, body_off;
static ssize_t rd(nghttp2_session *s, int32_t id, uint8_t *buf, size_t len, uint32_t *fl,
                  nghttp2_data_source *src, void *u)
{
    size_t n = body_len - body_off < len ? body_len - body_off : len;
    memcpy(buf, body_text + body_off, n);
    body_off += n;
    if (body_off == body_len)
        *fl |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}
static void dump(nghttp2_session *s, const char *path)
{
    FILE *f = fopen(path, "wb");
    const uint8_t *p;
    ssize_t n;
    while ((n = nghttp2_session_mem_send(s, &p)) > 0)
        fwrite(p, 1, (size_t)n, f);
    fclose(f);
    nghttp2_session_del(s);
}
static nghttp2_session *client(void)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session *s;
    nghttp2_session_client_new(&s, cb, NULL);
    nghttp2_session_callbacks_del(cb);
    nghttp2_settings_entry iv[] = {{NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 65535},
                                   {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 100}};
    nghttp2_submit_settings(s, 0, iv, 2);
    return s;
}
int main(int argc, char **argv)
{
    const char *d = argv[1];
    char path[512];
    nghttp2_session *s = client();
    nghttp2_nv h[] = {NV(":method", "GET"), NV(":path", "/healthz"), NV(":scheme", "http"),
                      NV(":authority", "127.0.0.1:9324")};
    nghttp2_submit_request(s, NULL, h, 4, NULL, NULL);
    snprintf(path, sizeof path, "%s/healthz", d);
    dump(s, path);

    s = client();
    nghttp2_nv p[] = {
        NV(":method", "POST"),
        NV(":path", "/"),
        NV(":scheme", "http"),
        NV(":authority", "127.0.0.1:9324"),
        NV("x-amz-target", "AmazonSQS.SendMessage"),
        NV("content-type", "application/x-amz-json-1.0"),
        NV("x-amz-date", "20250101T000000Z"),
        NV("authorization",
           "AWS4-HMAC-SHA256 Credential=AKIDACME/20250101/us-east-1/sqs/aws4_request, "
           "SignedHeaders=content-type;host;x-amz-date;x-amz-target, "
           "Signature=0000000000000000000000000000000000000000000000000000000000000000")};
    body_text = "{\"QueueUrl\":\"http://127.0.0.1:9324/acme/q\",\"MessageBody\":\"hello\"}";
    body_len = strlen(body_text);
    body_off = 0;
    nghttp2_data_provider prd = {.read_callback = rd};
    nghttp2_submit_request(s, NULL, p, 8, &prd, NULL);
    snprintf(path, sizeof path, "%s/post_send_message", d);
    dump(s, path);

    s = client();
    int32_t a = nghttp2_submit_request(s, NULL, p, 6, NULL, NULL);
    nghttp2_submit_request(s, NULL, h, 4, NULL, NULL);
    nghttp2_submit_rst_stream(s, 0, a, NGHTTP2_CANCEL);
    uint8_t op[8] = "pingpong";
    nghttp2_submit_ping(s, 0, op);
    nghttp2_submit_window_update(s, 0, 0, 100000);
    snprintf(path, sizeof path, "%s/two_streams_rst_ping", d);
    dump(s, path);

    s = client();
    nghttp2_nv many[140];
    char names[140][16];
    for (int i = 0; i < 4; i++)
        many[i] = h[i];
    for (int i = 4; i < 140; i++) {
        snprintf(names[i], 16, "x-h%d", i);
        many[i] = (nghttp2_nv)NV(names[i], "v");
    }
    nghttp2_submit_request(s, NULL, many, 140, NULL, NULL);
    snprintf(path, sizeof path, "%s/too_many_headers", d);
    dump(s, path);

    s = client();
    nghttp2_nv cl[] = {NV(":method", "POST"), NV(":path", "/"), NV(":scheme", "http"),
                       NV(":authority", "x"), NV("content-length", "99999999")};
    body_text = "abc";
    body_len = 3;
    body_off = 0;
    nghttp2_submit_request(s, NULL, cl, 5, &prd, NULL);
    nghttp2_submit_goaway(s, 0, 0, NGHTTP2_NO_ERROR, NULL, 0);
    snprintf(path, sizeof path, "%s/oversize_content_length_goaway", d);
    dump(s, path);

    snprintf(path, sizeof path, "%s/http1_request", d);
    FILE *f = fopen(path, "wb");
    fputs("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", f);
    fclose(f);
    return 0;
}
