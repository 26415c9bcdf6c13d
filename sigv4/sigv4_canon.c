/*
 * sigv4_canon.c -- the canonical request, the one text both verifier and
 * signer hash. Canonicalisation follows AWS's "Create a canonical request"
 * reference and, where the prose leaves room, what the AWS SDK for
 * JavaScript v3 signer (@smithy/signature-v4) actually does, since that
 * and the other SDKs are the clients we must agree with byte for byte:
 *  - the path is taken as on the wire, dot segments and empty segments are
 *    removed (non-S3 services), and every byte outside AWS's unreserved set
 *    A-Z a-z 0-9 - _ . ~ is percent-encoded; as the wire form is already
 *    encoded once, this is AWS's "encode each segment twice";
 *  - query parameters are percent-decoded, re-encoded with the same set,
 *    and sorted by encoded name, then value;
 *  - the canonical headers are exactly the SignedHeaders list, in the
 *    order the client gave it, each value with CR, LF, tab and space runs
 *    collapsed to one space and trimmed, repeated headers joined with ',';
 *    a signed "host" or ":authority" absent from the header list is taken
 *    from the request's authority (HTTP/2 carries it as :authority).
 *
 * Threading: pure functions. Memory: bounded stack buffers only (see the
 * SIGV4_MAX_* limits in sigv4.h).
 */
#include "sigv4_canon.h"

#include <stdint.h>
#include <string.h>

#include "sigv4_text.h"

/* ---- encoding ---------------------------------------------------------- */

static bool eq_ci_cstr(struct sl_slice a, const char *s)
{
    return tx_eq_ci(a, sl_slice_cstr(s));
}

static bool is_unreserved(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '_' || c == '.' || c == '~';
}

static void out_encoded_byte(struct tx_out *o, unsigned char c)
{
    static const char digits[] = "0123456789ABCDEF";
    if (is_unreserved(c)) {
        tx_byte(o, (char)c);
        return;
    }
    char esc[3] = {'%', digits[c >> 4], digits[c & 15]};
    tx_put(o, esc, sizeof esc);
}

static void out_encoded(struct tx_out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        out_encoded_byte(o, (unsigned char)s.p[i]);
    }
}

/* Percent-decodes a query name or value s (valid %XX only; a stray '%'
 * stays literal; '+' is a space) and re-encodes it with AWS's unreserved
 * set, so "a%20b", "a+b" and over-encoded forms all canonicalise the same
 * way. '+' must read as the form decoder reads it (gw_sqs_query.c): else
 * the value signed is not the value processed, and a presigned URL's
 * "%2B" could become a space without breaking its signature. botocore
 * signs it so too (a GET built from AWSRequest params puts "+" on the
 * wire and signs "%20"). */
static void out_reencoded(struct tx_out *o, struct sl_slice s)
{
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < s.n && sl_hex_digit(s.p[i + 1]) >= 0 &&
                   sl_hex_digit(s.p[i + 2]) >= 0) {
            c = (unsigned char)(sl_hex_digit(s.p[i + 1]) << 4 | sl_hex_digit(s.p[i + 2]));
            i += 2;
        }
        out_encoded_byte(o, c);
    }
}

/* Collapses runs of white space to one space and trims both ends. */
static void out_header_value(struct tx_out *o, struct sl_slice v)
{
    bool pending_space = false;
    bool wrote = false;
    for (size_t i = 0; i < v.n; i++) {
        if (tx_is_ws(v.p[i])) {
            pending_space = true;
            continue;
        }
        if (pending_space && wrote) {
            tx_byte(o, ' ');
        }
        tx_byte(o, v.p[i]);
        pending_space = false;
        wrote = true;
    }
}

/* ---- canonical request ------------------------------------------------- */

static int canon_path(struct tx_out *o, struct sl_slice path, const char **why)
{
    if (path.n == 0) {
        tx_byte(o, '/');
        return SL_OK;
    }
    struct sl_slice seg[SIGV4_MAX_PATH_SEGMENTS];
    size_t nseg = 0;
    size_t start = 0;
    for (size_t j = 0; j <= path.n; j++) {
        if (j < path.n && path.p[j] != '/') {
            continue;
        }
        struct sl_slice s = {path.p + start, j - start};
        start = j + 1;
        if (s.n == 0 || sl_slice_eq_cstr(s, ".")) {
            continue;
        }
        if (sl_slice_eq_cstr(s, "..")) {
            if (nseg > 0) {
                nseg--;
            }
            continue;
        }
        if (nseg == SIGV4_MAX_PATH_SEGMENTS) {
            tx_set_why(why, "the path has more segments than the verifier allows");
            return SL_ETOOBIG;
        }
        seg[nseg++] = s;
    }
    if (path.p[0] == '/') {
        tx_byte(o, '/');
    }
    for (size_t i = 0; i < nseg; i++) {
        if (i > 0) {
            tx_byte(o, '/');
        }
        out_encoded(o, seg[i]);
    }
    if (nseg > 0 && path.p[path.n - 1] == '/') {
        tx_byte(o, '/');
    }
    return SL_OK;
}

/* One query parameter, re-encoded, as offsets into a scratch buffer. */
struct qparam {
    uint32_t name_off, name_len, value_off, value_len;
};

static int cmp_bytes(const char *a, size_t an, const char *b, size_t bn)
{
    int c = memcmp(a, b, SL_MIN(an, bn));
    if (c != 0) {
        return c;
    }
    return (an > bn) - (an < bn);
}

static int qparam_cmp(const char *base, const struct qparam *a, const struct qparam *b)
{
    int c = cmp_bytes(base + a->name_off, a->name_len, base + b->name_off, b->name_len);
    if (c != 0) {
        return c;
    }
    return cmp_bytes(base + a->value_off, a->value_len, base + b->value_off, b->value_len);
}

static int canon_query(struct tx_out *o, struct sl_slice q, const char **why)
{
    if (q.n == 0) {
        return SL_OK;
    }
    struct qparam prm[SIGV4_MAX_QUERY_PARAMS];
    char scratch[SIGV4_MAX_CANONICAL];
    struct tx_out sc = {scratch, 0, sizeof scratch, false};
    size_t np = 0;
    size_t start = 0;
    for (size_t j = 0; j <= q.n; j++) {
        if (j < q.n && q.p[j] != '&') {
            continue;
        }
        struct sl_slice piece = {q.p + start, j - start};
        start = j + 1;
        if (piece.n == 0) {
            continue;
        }
        if (np == SIGV4_MAX_QUERY_PARAMS) {
            tx_set_why(why, "the query has more parameters than the verifier allows");
            return SL_ETOOBIG;
        }
        const char *eq = memchr(piece.p, '=', piece.n);
        struct sl_slice name = {piece.p, eq ? (size_t)(eq - piece.p) : piece.n};
        struct sl_slice value = {eq ? eq + 1 : piece.p + piece.n, eq ? piece.n - name.n - 1 : 0};
        struct qparam *p = &prm[np++];
        p->name_off = (uint32_t)sc.n;
        out_reencoded(&sc, name);
        p->name_len = (uint32_t)(sc.n - p->name_off);
        p->value_off = (uint32_t)sc.n;
        out_reencoded(&sc, value);
        p->value_len = (uint32_t)(sc.n - p->value_off);
    }
    if (sc.full) {
        tx_set_why(why, "the query is longer than the verifier allows");
        return SL_ETOOBIG;
    }
    /* Insertion sort: n is bounded and small, and it needs no context
     * pointer, which qsort's comparator cannot take. */
    for (size_t i = 1; i < np; i++) {
        struct qparam cur = prm[i];
        size_t k = i;
        while (k > 0 && qparam_cmp(scratch, &prm[k - 1], &cur) > 0) {
            prm[k] = prm[k - 1];
            k--;
        }
        prm[k] = cur;
    }
    for (size_t i = 0; i < np; i++) {
        if (i > 0) {
            tx_byte(o, '&');
        }
        tx_put(o, scratch + prm[i].name_off, prm[i].name_len);
        tx_byte(o, '=');
        tx_put(o, scratch + prm[i].value_off, prm[i].value_len);
    }
    return SL_OK;
}

static bool is_authority_name(struct sl_slice name)
{
    return eq_ci_cstr(name, "host") || eq_ci_cstr(name, ":authority");
}

/* Emits "name:value\n" for one signed header name. */
static int canon_header(struct tx_out *o, const struct sigv4_request *req, struct sl_slice name,
                        const char **why)
{
    tx_lower_slice(o, name);
    tx_byte(o, ':');
    bool found = false;
    for (size_t i = 0; i < req->header_count; i++) {
        if (!tx_eq_ci(req->headers[i].name, name)) {
            continue;
        }
        if (found) {
            tx_byte(o, ',');
        }
        out_header_value(o, req->headers[i].value);
        found = true;
    }
    if (!found) {
        if (!is_authority_name(name) || req->authority.n == 0) {
            tx_set_why(why, "a header named in SignedHeaders is absent from the request");
            return SL_ENOTFOUND;
        }
        out_header_value(o, req->authority);
    }
    tx_byte(o, '\n');
    return SL_OK;
}

int sigv4__canonical_request(const struct sigv4_request *req, struct sl_slice signed_headers,
                             struct sl_slice payload_hash, char *out, size_t cap, size_t *len,
                             const char **why)
{
    SL_ASSERT(cap > 0);
    struct tx_out o = {out, 0, cap, false};
    *len = 0;
    out[0] = '\0';
    if (signed_headers.n == 0) {
        tx_set_why(why, "SignedHeaders is empty");
        return SL_EINVAL;
    }
    tx_slice(&o, req->method);
    tx_byte(&o, '\n');
    int rc = canon_path(&o, req->path, why);
    if (rc != SL_OK) {
        return rc;
    }
    tx_byte(&o, '\n');
    rc = canon_query(&o, req->query, why);
    if (rc != SL_OK) {
        return rc;
    }
    tx_byte(&o, '\n');
    size_t count = 0;
    size_t start = 0;
    for (size_t j = 0; j <= signed_headers.n; j++) {
        if (j < signed_headers.n && signed_headers.p[j] != ';') {
            continue;
        }
        struct sl_slice name = {signed_headers.p + start, j - start};
        start = j + 1;
        if (name.n == 0) {
            tx_set_why(why, "SignedHeaders has an empty name");
            return SL_EINVAL;
        }
        if (++count > SIGV4_MAX_SIGNED_HEADERS) {
            tx_set_why(why, "SignedHeaders names more headers than the verifier allows");
            return SL_ETOOBIG;
        }
        rc = canon_header(&o, req, name, why);
        if (rc != SL_OK) {
            return rc;
        }
    }
    tx_byte(&o, '\n');
    tx_lower_slice(&o, signed_headers);
    tx_byte(&o, '\n');
    tx_slice(&o, payload_hash);
    if (o.full) {
        tx_set_why(why, "the canonical request is longer than the verifier allows");
        return SL_ETOOBIG;
    }
    out[o.n] = '\0';
    *len = o.n;
    return SL_OK;
}

const struct sigv4_header *sigv4__find_header(const struct sigv4_request *req, const char *name)
{
    struct sl_slice n = sl_slice_cstr(name);
    for (size_t i = 0; i < req->header_count; i++) {
        if (tx_eq_ci(req->headers[i].name, n)) {
            return &req->headers[i];
        }
    }
    return NULL;
}
