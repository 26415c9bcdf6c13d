/*
 * test_query_protocol.c -- the SQS query protocol against the real
 * sluiced over HTTP/2 (h2c, libcurl signing with CURLOPT_AWS_SIGV4): a
 * form-encoded request for every action, with the list and map forms
 * (Attribute.N, Tag.N, AttributeName.N, MessageAttribute.N,
 * <Action>RequestEntry.N), the XML replies checked by string matching,
 * the MD5s checked against the JSON protocol's, a POST to the queue's URL
 * path, a presigned GET, and the error paths (unknown action, missing
 * Version, bad list index, nonexistent queue, throttled, bad signature).
 *
 * Expectations: the Amazon SQS API Reference's query examples and
 * "Common Errors" (docs/api.md, "The query protocol").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "it_sqs.h"

#define V "Version=2012-11-05"
#define XMLNS "xmlns=\"http://queue.amazonaws.com/doc/2012-11-05/\""
#define SLOW_KEY "AKIDSLOW"
#define SLOW_SECRET "slow-secret"

static struct it_server srv;

static const char tenants_yaml[] = "tenants:\n"
                                   "  " IT_TENANT ":\n"
                                   "    access_key_id: " IT_KEY "\n"
                                   "    secret_access_key: " IT_SECRET "\n"
                                   "  slow:\n"
                                   "    access_key_id: " SLOW_KEY "\n"
                                   "    secret_access_key: " SLOW_SECRET "\n"
                                   "    limits:\n"
                                   "      requests_per_second: 0.001\n"
                                   "      burst: 2\n";

/* ---- helpers -------------------------------------------------------------------- */

/* A form POSTed to path, signed with key/secret. */
static struct it_response post_as(const char *path, const char *form, const char *key,
                                  const char *secret)
{
    const char *headers[] = {"content-type: application/x-www-form-urlencoded; charset=utf-8",
                             NULL};
    struct it_request req = {
        .method = "POST",
        .path = path,
        .headers = headers,
        .body = form,
        .body_len = strlen(form),
        .access_key = key,
        .secret = secret,
    };
    struct it_response r;
    IT_CHECK(it_request(&srv, &req, &r) == 0);
    return r;
}

static struct it_response post(const char *form)
{
    return post_as("/", form, IT_KEY, IT_SECRET);
}

/* Percent-encodes s (everything but AWS's unreserved set) into out. */
static void url_encode(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s != '\0' && o + 4 < cap; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
}

/* The text of the n-th (0-based) <tag>...</tag> in xml, unescaped, in a
 * malloc'd string, or NULL. */
static char *xml_nth(const char *xml, const char *tag, int n)
{
    char open[128], close[128];
    snprintf(open, sizeof open, "<%s>", tag);
    snprintf(close, sizeof close, "</%s>", tag);
    const char *p = xml;
    for (int i = 0; p != NULL && i <= n; i++) {
        p = strstr(p, open);
        if (p != NULL && i < n) {
            p += strlen(open);
        }
    }
    if (p == NULL) {
        return NULL;
    }
    p += strlen(open);
    const char *e = strstr(p, close);
    if (e == NULL) {
        return NULL;
    }
    char *out = malloc((size_t)(e - p) + 1);
    size_t o = 0;
    while (p < e) {
        static const struct {
            const char *ref;
            char c;
        } refs[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&#xD;", '\r'}, {"&quot;", '"'}};
        bool done = false;
        for (size_t k = 0; k < sizeof refs / sizeof refs[0] && !done; k++) {
            size_t rl = strlen(refs[k].ref);
            if (strncmp(p, refs[k].ref, rl) == 0) {
                out[o++] = refs[k].c;
                p += rl;
                done = true;
            }
        }
        if (!done) {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    return out;
}

static char *xml_get(const char *xml, const char *tag)
{
    return xml_nth(xml, tag, 0);
}

static int xml_count(const char *xml, const char *tag)
{
    char open[128];
    snprintf(open, sizeof open, "<%s>", tag);
    int n = 0;
    for (const char *p = strstr(xml, open); p != NULL; p = strstr(p + 1, open)) {
        n++;
    }
    return n;
}

/* A 200 <ActionResponse> with its request id. */
static void expect_ok(const struct it_response *r, const char *action)
{
    char want[160];
    snprintf(want, sizeof want, "<%sResponse " XMLNS ">", action);
    IT_CHECK(r->status == 200);
    IT_CHECK(r->body != NULL && strstr(r->body, want) != NULL);
    IT_CHECK(r->body != NULL && strstr(r->body, "<ResponseMetadata><RequestId>") != NULL);
    char ctype[64];
    IT_CHECK(it_response_header(r, "content-type", ctype, sizeof ctype) &&
             strcmp(ctype, "text/xml") == 0);
    if (r->status != 200) {
        fprintf(stderr, "%s: %ld %s\n", action, r->status, r->body ? r->body : "");
    }
}

/* An <ErrorResponse> with this status, type and code. */
static void expect_error(const struct it_response *r, long status, const char *type,
                         const char *code)
{
    IT_CHECK(r->status == status);
    IT_CHECK(r->body != NULL && strstr(r->body, "<ErrorResponse " XMLNS "><Error>") != NULL);
    char *t = r->body != NULL ? xml_get(r->body, "Type") : NULL;
    char *c = r->body != NULL ? xml_get(r->body, "Code") : NULL;
    IT_CHECK(t != NULL && strcmp(t, type) == 0);
    IT_CHECK(c != NULL && strcmp(c, code) == 0);
    IT_CHECK(r->body != NULL && strstr(r->body, "</Error><RequestId>") != NULL);
    if (c == NULL || strcmp(c, code) != 0 || r->status != status) {
        fprintf(stderr, "wanted %ld %s, got %ld %s\n", status, code, r->status,
                r->body ? r->body : "");
    }
    free(t);
    free(c);
}

static char *create(const char *name, const char *extra)
{
    char form[1024];
    snprintf(form, sizeof form, "Action=CreateQueue&" V "&QueueName=%s%s", name, extra);
    struct it_response r = post(form);
    expect_ok(&r, "CreateQueue");
    char *url = r.body != NULL ? xml_get(r.body, "QueueUrl") : NULL;
    IT_CHECK(url != NULL);
    it_response_free(&r);
    return url != NULL ? url : strdup("");
}

/* ---- every action ---------------------------------------------------------------- */

static void queues(void)
{
    char *url = create("orders", "&Attribute.1.Name=VisibilityTimeout&Attribute.1.Value=40"
                                 "&Tag.1.Key=team&Tag.1.Value=blue");
    char want[128];
    snprintf(want, sizeof want, "%s/" IT_TENANT "/orders", srv.base_url);
    IT_STREQ(url, want);
    char enc[512], form[2048];
    url_encode(url, enc, sizeof enc);

    struct it_response r = post("Action=GetQueueUrl&" V "&QueueName=orders");
    expect_ok(&r, "GetQueueUrl");
    char *got = xml_get(r.body, "QueueUrl");
    IT_STREQ(got, url);
    free(got);
    it_response_free(&r);

    free(create("orders-2", ""));
    r = post("Action=ListQueues&" V "&QueueNamePrefix=orders");
    expect_ok(&r, "ListQueues");
    IT_CHECK(xml_count(r.body, "QueueUrl") == 2);
    it_response_free(&r);
    r = post("Action=ListQueues&" V "&QueueNamePrefix=orders&MaxResults=1");
    IT_CHECK(xml_count(r.body, "QueueUrl") == 1 && xml_count(r.body, "NextToken") == 1);
    it_response_free(&r);

    snprintf(form, sizeof form,
             "Action=SetQueueAttributes&" V "&QueueUrl=%s&Attribute.1.Name=DelaySeconds"
             "&Attribute.1.Value=0&Attribute.2.Name=MaximumMessageSize&Attribute.2.Value=4096",
             enc);
    r = post(form);
    expect_ok(&r, "SetQueueAttributes");
    IT_CHECK(strstr(r.body, "<SetQueueAttributesResult>") == NULL);
    it_response_free(&r);
    snprintf(form, sizeof form,
             "Action=GetQueueAttributes&" V "&QueueUrl=%s&AttributeName.1=VisibilityTimeout"
             "&AttributeName.2=MaximumMessageSize",
             enc);
    r = post(form);
    expect_ok(&r, "GetQueueAttributes");
    IT_CHECK(strstr(r.body, "<Attribute><Name>VisibilityTimeout</Name><Value>40</Value>"
                            "</Attribute>") != NULL);
    IT_CHECK(strstr(r.body, "<Attribute><Name>MaximumMessageSize</Name><Value>4096</Value>"
                            "</Attribute>") != NULL);
    it_response_free(&r);

    snprintf(form, sizeof form, "Action=TagQueue&" V "&QueueUrl=%s&Tag.1.Key=env&Tag.1.Value=prod",
             enc);
    r = post(form);
    expect_ok(&r, "TagQueue");
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=ListQueueTags&" V "&QueueUrl=%s", enc);
    r = post(form);
    expect_ok(&r, "ListQueueTags");
    IT_CHECK(strstr(r.body, "<Tag><Key>team</Key><Value>blue</Value></Tag>") != NULL);
    IT_CHECK(strstr(r.body, "<Tag><Key>env</Key><Value>prod</Value></Tag>") != NULL);
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=UntagQueue&" V "&QueueUrl=%s&TagKey.1=team", enc);
    r = post(form);
    expect_ok(&r, "UntagQueue");
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=ListQueueTags&" V "&QueueUrl=%s", enc);
    r = post(form);
    IT_CHECK(xml_count(r.body, "Tag") == 1 && strstr(r.body, "team") == NULL);
    it_response_free(&r);

    /* sluice has no IAM: the permission actions answer in XML too */
    snprintf(form, sizeof form,
             "Action=AddPermission&" V "&QueueUrl=%s&Label=l&AWSAccountId.1=1&ActionName.1=*", enc);
    r = post(form);
    expect_error(&r, 400, "Sender", "AWS.SimpleQueueService.UnsupportedOperation");
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=RemovePermission&" V "&QueueUrl=%s&Label=l", enc);
    r = post(form);
    expect_error(&r, 400, "Sender", "AWS.SimpleQueueService.UnsupportedOperation");
    it_response_free(&r);
    free(url);
}

static void messages(void)
{
    char *url = create("msgs", "");
    char enc[512], form[8192], ebody[512];
    url_encode(url, enc, sizeof enc);
    /* characters XML must escape, and a CR that must survive as &#xD; */
    const char *body = "a&b <c> \"d\"\r\ne\ttab";
    url_encode(body, ebody, sizeof ebody);
    snprintf(form, sizeof form,
             "Action=SendMessage&" V "&QueueUrl=%s&MessageBody=%s"
             "&MessageAttribute.1.Name=color&MessageAttribute.1.Value.DataType=String"
             "&MessageAttribute.1.Value.StringValue=red"
             "&MessageAttribute.2.Name=size&MessageAttribute.2.Value.DataType=Number"
             "&MessageAttribute.2.Value.StringValue=42"
             "&MessageAttribute.3.Name=blob&MessageAttribute.3.Value.DataType=Binary"
             "&MessageAttribute.3.Value.BinaryValue=AAEC",
             enc, ebody);
    struct it_response r = post(form);
    expect_ok(&r, "SendMessage");
    char md5[33];
    it_md5_hex(body, strlen(body), md5);
    char *got = xml_get(r.body, "MD5OfMessageBody");
    IT_STREQ(got, md5);
    free(got);
    /* the attribute MD5 is the JSON protocol's for the same attributes */
    char *attr_md5 = xml_get(r.body, "MD5OfMessageAttributes");
    char *message_id = xml_get(r.body, "MessageId");
    IT_CHECK(attr_md5 != NULL && message_id != NULL && strlen(message_id) == 36);
    free(message_id);
    it_response_free(&r);
    json_t *jreq = json_pack("{s:s,s:s,s:{s:{s:s,s:s},s:{s:s,s:s},s:{s:s,s:s}}}", "QueueUrl", url,
                             "MessageBody", "x", "MessageAttributes", "color", "DataType", "String",
                             "StringValue", "red", "size", "DataType", "Number", "StringValue",
                             "42", "blob", "DataType", "Binary", "BinaryValue", "AAEC");
    struct it_reply jr = it_call(&srv, "SendMessage", jreq);
    IT_OK(&jr);
    IT_STREQ(it_str(&jr, "MD5OfMessageAttributes"), attr_md5 != NULL ? attr_md5 : "");
    it_reply_free(&jr);

    snprintf(form, sizeof form,
             "Action=SendMessageBatch&" V "&QueueUrl=%s"
             "&SendMessageBatchRequestEntry.1.Id=one&SendMessageBatchRequestEntry.1.MessageBody=b1"
             "&SendMessageBatchRequestEntry.2.Id=two&SendMessageBatchRequestEntry.2.MessageBody=b2"
             "&SendMessageBatchRequestEntry.2.DelaySeconds=0"
             "&SendMessageBatchRequestEntry.3.Id=bad"
             "&SendMessageBatchRequestEntry.3.MessageBody=%%01",
             enc);
    r = post(form);
    expect_ok(&r, "SendMessageBatch");
    IT_CHECK(xml_count(r.body, "SendMessageBatchResultEntry") == 2);
    IT_CHECK(strstr(r.body, "<BatchResultErrorEntry><Id>bad</Id><SenderFault>true</SenderFault>"
                            "<Code>InvalidMessageContents</Code>") != NULL);
    it_response_free(&r);

    /* receive everything: 1 + 1 (JSON) + 2 */
    char *handles[8] = {0};
    int n = 0;
    bool saw_body = false;
    for (int tries = 0; tries < 20 && n < 4; tries++) {
        snprintf(form, sizeof form,
                 "Action=ReceiveMessage&" V "&QueueUrl=%s&MaxNumberOfMessages=10"
                 "&AttributeName.1=All&MessageAttributeName.1=All&WaitTimeSeconds=1",
                 enc);
        r = post(form);
        expect_ok(&r, "ReceiveMessage");
        int k = xml_count(r.body, "Message");
        for (int i = 0; i < k && n < 8; i++) {
            handles[n++] = xml_nth(r.body, "ReceiptHandle", i);
            char *b = xml_nth(r.body, "Body", i);
            if (b != NULL && strcmp(b, body) == 0) {
                saw_body = true;
            }
            free(b);
        }
        if (strstr(r.body, "<Name>color</Name>") != NULL) {
            IT_CHECK(strstr(r.body, "<MessageAttribute><Name>blob</Name><Value><BinaryValue>AAEC"
                                    "</BinaryValue><DataType>Binary</DataType></Value>") != NULL);
            IT_CHECK(strstr(r.body, "<Attribute><Name>SentTimestamp</Name>") != NULL);
            IT_CHECK(strstr(r.body, "&#xD;") != NULL);
        }
        it_response_free(&r);
    }
    IT_CHECK(n == 4);
    IT_CHECK(saw_body);

    char eh[4][2048];
    for (int i = 0; i < 4; i++) {
        url_encode(handles[i] != NULL ? handles[i] : "", eh[i], sizeof eh[i]);
    }
    snprintf(form, sizeof form,
             "Action=ChangeMessageVisibility&" V "&QueueUrl=%s&ReceiptHandle=%s"
             "&VisibilityTimeout=60",
             enc, eh[0]);
    r = post(form);
    expect_ok(&r, "ChangeMessageVisibility");
    it_response_free(&r);
    snprintf(form, sizeof form,
             "Action=ChangeMessageVisibilityBatch&" V "&QueueUrl=%s"
             "&ChangeMessageVisibilityBatchRequestEntry.1.Id=a"
             "&ChangeMessageVisibilityBatchRequestEntry.1.ReceiptHandle=%s"
             "&ChangeMessageVisibilityBatchRequestEntry.1.VisibilityTimeout=60",
             enc, eh[1]);
    r = post(form);
    expect_ok(&r, "ChangeMessageVisibilityBatch");
    IT_CHECK(strstr(r.body, "<ChangeMessageVisibilityBatchResultEntry><Id>a</Id>") != NULL);
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=DeleteMessage&" V "&QueueUrl=%s&ReceiptHandle=%s", enc,
             eh[0]);
    r = post(form);
    expect_ok(&r, "DeleteMessage");
    it_response_free(&r);
    snprintf(
        form, sizeof form,
        "Action=DeleteMessageBatch&" V "&QueueUrl=%s"
        "&DeleteMessageBatchRequestEntry.1.Id=x&DeleteMessageBatchRequestEntry.1.ReceiptHandle=%s"
        "&DeleteMessageBatchRequestEntry.2.Id=y&DeleteMessageBatchRequestEntry.2.ReceiptHandle=%s"
        "&DeleteMessageBatchRequestEntry.3.Id=z&DeleteMessageBatchRequestEntry.3.ReceiptHandle=%s",
        enc, eh[1], eh[2], eh[3]);
    r = post(form);
    expect_ok(&r, "DeleteMessageBatch");
    IT_CHECK(xml_count(r.body, "DeleteMessageBatchResultEntry") == 3);
    it_response_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessagesNotVisible") == 0);
    for (int i = 0; i < n; i++) {
        free(handles[i]);
    }

    /* posted to the queue's URL path, without QueueUrl */
    r = post_as("/" IT_TENANT "/msgs", "Action=SendMessage&" V "&MessageBody=by-path", IT_KEY,
                IT_SECRET);
    expect_ok(&r, "SendMessage");
    it_response_free(&r);
    IT_CHECK(it_queue_attr_int(&srv, url, "ApproximateNumberOfMessages") == 1);

    snprintf(form, sizeof form, "Action=PurgeQueue&" V "&QueueUrl=%s", enc);
    r = post(form);
    expect_ok(&r, "PurgeQueue");
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=DeleteQueue&" V "&QueueUrl=%s", enc);
    r = post(form);
    expect_ok(&r, "DeleteQueue");
    it_response_free(&r);
    free(attr_md5);
    free(url);
}

static void redrive(void)
{
    char *dlq = create("dead", "");
    char arn[256], policy[512], epolicy[1024], form[4096];
    snprintf(arn, sizeof arn, "arn:aws:sqs:" IT_REGION ":" IT_TENANT ":dead");
    snprintf(policy, sizeof policy, "{\"deadLetterTargetArn\":\"%s\",\"maxReceiveCount\":\"3\"}",
             arn);
    url_encode(policy, epolicy, sizeof epolicy);
    char *src = create("source", "");
    char esrc[512], edlq[512], earn[512];
    url_encode(src, esrc, sizeof esrc);
    url_encode(dlq, edlq, sizeof edlq);
    url_encode(arn, earn, sizeof earn);
    snprintf(form, sizeof form,
             "Action=SetQueueAttributes&" V "&QueueUrl=%s&Attribute.1.Name=RedrivePolicy"
             "&Attribute.1.Value=%s",
             esrc, epolicy);
    struct it_response r = post(form);
    expect_ok(&r, "SetQueueAttributes");
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=ListDeadLetterSourceQueues&" V "&QueueUrl=%s", edlq);
    r = post(form);
    expect_ok(&r, "ListDeadLetterSourceQueues");
    char *got = xml_get(r.body, "QueueUrl");
    IT_STREQ(got, src);
    free(got);
    it_response_free(&r);

    snprintf(form, sizeof form, "Action=StartMessageMoveTask&" V "&SourceArn=%s", earn);
    r = post(form);
    expect_ok(&r, "StartMessageMoveTask");
    char *handle = xml_get(r.body, "TaskHandle");
    IT_CHECK(handle != NULL && handle[0] != '\0');
    it_response_free(&r);
    snprintf(form, sizeof form, "Action=ListMessageMoveTasks&" V "&SourceArn=%s&MaxResults=10",
             earn);
    r = post(form);
    expect_ok(&r, "ListMessageMoveTasks");
    IT_CHECK(xml_count(r.body, "ListMessageMoveTasksResultEntry") == 1);
    IT_CHECK(strstr(r.body, "<ApproximateNumberOfMessagesMoved>0<") != NULL);
    it_response_free(&r);
    char ehandle[1024];
    url_encode(handle != NULL ? handle : "", ehandle, sizeof ehandle);
    snprintf(form, sizeof form, "Action=CancelMessageMoveTask&" V "&TaskHandle=%s", ehandle);
    r = post(form);
    /* an empty DLQ's task may have completed already: only RUNNING ones
     * can be cancelled */
    if (r.status == 200) {
        expect_ok(&r, "CancelMessageMoveTask");
        IT_CHECK(strstr(r.body, "<ApproximateNumberOfMessagesMoved>") != NULL);
    } else {
        expect_error(&r, 404, "Sender", "ResourceNotFoundException");
    }
    it_response_free(&r);
    free(handle);
    free(src);
    free(dlq);
}

/* ---- a presigned GET ------------------------------------------------------------- */

static void hmac(const void *key, size_t key_len, const char *msg, unsigned char out[32])
{
    unsigned int len = 32;
    HMAC(EVP_sha256(), key, (int)key_len, (const unsigned char *)msg, strlen(msg), out, &len);
}

static void sha256_hex(const char *s, char out[65])
{
    unsigned char d[32];
    unsigned int len = 0;
    EVP_Digest(s, strlen(s), d, &len, EVP_sha256(), NULL);
    for (size_t i = 0; i < 32; i++) {
        snprintf(out + 2 * i, 3, "%02x", d[i]);
    }
}

/* The query of a presigned GET of path with params (already encoded and
 * sorted, all before "X-Amz-"), signed at t for expires seconds. */
static void presign(const char *method, const char *path, const char *params, time_t t, int expires,
                    char *out, size_t cap)
{
    struct tm tm;
    gmtime_r(&t, &tm);
    char date[9], amz_date[17];
    strftime(date, sizeof date, "%Y%m%d", &tm);
    strftime(amz_date, sizeof amz_date, "%Y%m%dT%H%M%SZ", &tm);
    char query[2048];
    snprintf(query, sizeof query,
             "%s&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=" IT_KEY "%%2F%s%%2F" IT_REGION
             "%%2Fsqs%%2Faws4_request&X-Amz-Date=%s&X-Amz-Expires=%d&X-Amz-SignedHeaders=host",
             params, date, amz_date, expires);
    const char *host = srv.base_url + strlen("http://");
    char empty_hash[65], canonical[4096], canonical_hash[65], sts[512];
    sha256_hex("", empty_hash);
    snprintf(canonical, sizeof canonical, "%s\n%s\n%s\nhost:%s\n\nhost\n%s", method, path, query,
             host, empty_hash);
    sha256_hex(canonical, canonical_hash);
    snprintf(sts, sizeof sts, "AWS4-HMAC-SHA256\n%s\n%s/" IT_REGION "/sqs/aws4_request\n%s",
             amz_date, date, canonical_hash);
    unsigned char k1[32], k2[32], k3[32], k4[32], sig[32];
    hmac("AWS4" IT_SECRET, strlen("AWS4" IT_SECRET), date, k1);
    hmac(k1, 32, IT_REGION, k2);
    hmac(k2, 32, "sqs", k3);
    hmac(k3, 32, "aws4_request", k4);
    hmac(k4, 32, sts, sig);
    char sig_hex[65];
    for (size_t i = 0; i < 32; i++) {
        snprintf(sig_hex + 2 * i, 3, "%02x", sig[i]);
    }
    snprintf(out, cap, "%s?%s&X-Amz-Signature=%s", path, query, sig_hex);
}

static struct it_response send_presigned(const char *method, const char *path_and_query)
{
    struct it_request req = {.method = method, .path = path_and_query};
    struct it_response r;
    IT_CHECK(it_request(&srv, &req, &r) == 0);
    return r;
}

static void presigned(void)
{
    char *url = create("signed", "");
    char path[4096];
    presign("GET", "/" IT_TENANT "/signed", "Action=GetQueueAttributes&AttributeName.1=QueueArn&" V,
            time(NULL), 300, path, sizeof path);
    struct it_response r = send_presigned("GET", path);
    expect_ok(&r, "GetQueueAttributes");
    IT_CHECK(strstr(r.body, "<Name>QueueArn</Name>") != NULL);
    it_response_free(&r);
    /* expired */
    presign("GET", "/" IT_TENANT "/signed", "Action=GetQueueAttributes&AttributeName.1=QueueArn&" V,
            time(NULL) - 400, 300, path, sizeof path);
    r = send_presigned("GET", path);
    expect_error(&r, 400, "Sender", "RequestExpired");
    it_response_free(&r);
    /* another action under the same signature */
    presign("GET", "/" IT_TENANT "/signed", "Action=GetQueueAttributes&AttributeName.1=QueueArn&" V,
            time(NULL), 300, path, sizeof path);
    char *at = strstr(path, "GetQueueAttributes");
    memcpy(at, "PurgeQueueXXXXXXXXX", strlen("GetQueueAttributes"));
    r = send_presigned("GET", path);
    expect_error(&r, 403, "Sender", "SignatureDoesNotMatch");
    it_response_free(&r);
    /* a POST presigned as botocore does it: the form in the query, no body */
    presign("POST", "/", "Action=ListQueues&QueueNamePrefix=sig&" V, time(NULL), 60, path,
            sizeof path);
    r = send_presigned("POST", path);
    expect_ok(&r, "ListQueues");
    IT_CHECK(xml_count(r.body, "QueueUrl") == 1);
    it_response_free(&r);
    free(url);
}

/* ---- errors ------------------------------------------------------------------------ */

static void errors(void)
{
    struct it_response r = post("Action=Frobnicate&" V);
    expect_error(&r, 400, "Sender", "InvalidAction");
    it_response_free(&r);
    r = post(V);
    expect_error(&r, 400, "Sender", "MissingAction");
    it_response_free(&r);
    /* No Version is 2012-11-05 (kombu sends none); another is refused. */
    r = post("Action=ListQueues");
    IT_CHECK(r.status == 200 && strstr(r.body, "<ListQueuesResponse") != NULL);
    it_response_free(&r);
    r = post("Action=ListQueues&Version=2008-01-01");
    expect_error(&r, 400, "Sender", "InvalidParameterValue");
    IT_CHECK(strstr(r.body, "Version") != NULL);
    it_response_free(&r);
    r = post("Action=GetQueueAttributes&" V "&QueueUrl=x&AttributeName.0=All");
    expect_error(&r, 400, "Sender", "InvalidQueryParameter");
    it_response_free(&r);
    r = post("Action=ListQueues&" V "&QueueNamePrefix=%zz");
    expect_error(&r, 404, "Sender", "MalformedQueryString");
    it_response_free(&r);
    r = post("Action=ListQueues&" V "&MaxResults=many");
    expect_error(&r, 400, "Sender", "InvalidParameterValue");
    it_response_free(&r);
    char form[512];
    snprintf(form, sizeof form,
             "Action=SendMessage&" V "&MessageBody=x&QueueUrl=%s%%2F" IT_TENANT "%%2Fnope",
             "http%3A%2F%2Flocalhost%3A1");
    r = post(form);
    expect_error(&r, 400, "Sender", "AWS.SimpleQueueService.NonExistentQueue");
    it_response_free(&r);
    r = post_as("/", "Action=ListQueues&" V, IT_KEY, "wrong-secret");
    expect_error(&r, 403, "Sender", "SignatureDoesNotMatch");
    it_response_free(&r);
    r = post_as("/", "Action=ListQueues&" V, NULL, NULL);
    expect_error(&r, 403, "Sender", "MissingAuthenticationToken");
    it_response_free(&r);
    /* the slow tenant's burst of two, then RequestThrottled */
    int throttled = 0;
    for (int i = 0; i < 4; i++) {
        r = post_as("/", "Action=ListQueues&" V, SLOW_KEY, SLOW_SECRET);
        if (r.status == 403) {
            expect_error(&r, 403, "Sender", "RequestThrottled");
            throttled++;
        } else {
            expect_ok(&r, "ListQueues");
        }
        it_response_free(&r);
    }
    IT_CHECK(throttled == 2);
    /* the JSON protocol is unchanged beside it */
    struct it_reply jr = it_call(&srv, "ListQueues", json_object());
    IT_OK(&jr);
    it_reply_free(&jr);
    IT_CHECK(it_healthz(&srv));
}

int main(void)
{
    struct it_options opt = {.tenants_yaml = tenants_yaml};
    IT_REQUIRE(it_server_start(&srv, &opt) == 0);
    queues();
    messages();
    redrive();
    presigned();
    errors();
    IT_CHECK(it_healthz(&srv));
    IT_CHECK(it_server_stop(&srv) == 0);
    it_server_cleanup(&srv);
    return it_summary();
}
