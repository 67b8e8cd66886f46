/*
 * objstore/s3.c - a minimal S3 client (PUT, GET with ranges, DELETE,
 * ListObjectsV2 with paging, create bucket) over libcurl, signed with libcurl's built-in AWS
 * SigV4 (CURLOPT_AWS_SIGV4). Path-style URLs: ENDPOINT/BUCKET/PREFIX/NAME,
 * so any S3-compatible server on any address works (tested against
 * OpenStack Swift's s3api). Payloads are sent as UNSIGNED-PAYLOAD (the
 * transport's integrity plus our own checksums in every file).
 *
 * Used by storage/store.c to mirror a storage directory into a bucket
 * (storage.h, "Remote storage") and by io/tr_s3.c to read the objects of
 * an s3_input. Each call uses its own easy handle, so calls may run on any
 * thread.
 */
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../base/buf.h"
#include "../base/mem.h"
#include "../base/vec.h"
#include "s3.h"

struct S3 {
    char *endpoint;   /* http://host:port, no trailing slash */
    char *bucket;
    char *prefix;     /* "" or "a/b/" */
    char *region;
    char *key, *secret;
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static void curl_init_once(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

static const char *env(const char *name)
{
    const char *v = getenv(name);
    return v && *v ? v : NULL;
}

int s3_new(const S3Config *cfg, const char *what, S3 **out, Err *err)
{
    *out = NULL;
    const char *ep = cfg->endpoint ? cfg->endpoint : env("SLUICE_S3_ENDPOINT");
    if (!ep)
        ep = env("AWS_ENDPOINT_URL");
    if (!ep)
        return err_set(err, SL_ECONFIG, "%s: no S3 endpoint: give --s3-endpoint URL "
                       "(or set AWS_ENDPOINT_URL)", what);
    const char *key = cfg->key ? cfg->key : env("AWS_ACCESS_KEY_ID");
    const char *secret = cfg->secret ? cfg->secret : env("AWS_SECRET_ACCESS_KEY");
    if (!key || !secret)
        return err_set(err, SL_ECONFIG, "%s: set AWS_ACCESS_KEY_ID and "
                       "AWS_SECRET_ACCESS_KEY to the bucket's credentials", what);
    const char *region = cfg->region ? cfg->region : env("AWS_REGION");
    pthread_once(&curl_once, curl_init_once);
    S3 *s = sl_calloc(1, sizeof(*s));
    size_t en = strlen(ep);
    while (en && ep[en - 1] == '/')
        en--;
    s->endpoint = sl_strndup(ep, en);
    s->bucket = sl_strdup(cfg->bucket);
    s->prefix = sl_strdup(cfg->prefix ? cfg->prefix : "");
    s->region = sl_strdup(region ? region : "us-east-1");
    s->key = sl_strdup(key);
    s->secret = sl_strdup(secret);
    *out = s;
    return 0;
}

int s3_open(const char *url, S3 **out, Err *err)
{
    *out = NULL;
    if (strncmp(url, "s3://", 5))
        return err_set(err, SL_ECONFIG, "storage %s: not an s3:// URL", url);
    const char *b = url + 5, *slash = strchr(b, '/');
    size_t bn = slash ? (size_t)(slash - b) : strlen(b);
    if (bn == 0)
        return err_set(err, SL_ECONFIG, "storage %s: no bucket name (s3://BUCKET/PREFIX)", url);
    const char *pre = slash ? slash + 1 : "";
    size_t pn = strlen(pre);
    while (pn && pre[pn - 1] == '/')
        pn--;
    Buf pb = BUF_INIT, what = BUF_INIT;
    if (pn)
        buf_printf(&pb, "%.*s/", (int)pn, pre);
    buf_printf(&what, "storage %s", url);
    char *bucket = sl_strndup(b, bn);
    S3Config cfg = {.bucket = bucket, .prefix = pb.n ? buf_cstr(&pb) : ""};
    int rc = s3_new(&cfg, buf_cstr(&what), out, err);
    sl_free(bucket);
    buf_free(&pb);
    buf_free(&what);
    return rc;
}

void s3_free(S3 *s)
{
    if (!s)
        return;
    sl_free(s->endpoint);
    sl_free(s->bucket);
    sl_free(s->prefix);
    sl_free(s->region);
    sl_free(s->key);
    sl_free(s->secret);
    sl_free(s);
}

const char *s3_describe(const S3 *s, char *b, size_t n)
{
    snprintf(b, n, "s3://%s/%s at %s", s->bucket, s->prefix, s->endpoint);
    return b;
}

typedef struct Body {
    const uint8_t *p;
    size_t n, pos;
} Body;

static size_t on_read(char *dst, size_t size, size_t nmemb, void *arg)
{
    Body *b = arg;
    size_t k = size * nmemb, left = b->n - b->pos;
    if (k > left)
        k = left;
    memcpy(dst, b->p + b->pos, k);
    b->pos += k;
    return k;
}

static size_t on_write(char *src, size_t size, size_t nmemb, void *arg)
{
    buf_append((Buf *)arg, src, size * nmemb);
    return size * nmemb;
}

/* One request. url_tail follows ENDPOINT/BUCKET (may be "" for the bucket).
   Returns the HTTP status (0 on a transport error, err set) and the
   response body in *resp (when given). */
static long request_h(S3 *s, const char *method, const char *url_tail, const uint8_t *body,
                      size_t bn, const char *header, Buf *resp, Err *err)
{
    CURL *c = curl_easy_init();
    if (!c) {
        err_set(err, SL_EIO, "S3: cannot create a curl handle");
        return 0;
    }
    Buf url = BUF_INIT, sink = BUF_INIT;
    buf_printf(&url, "%s/%s%s", s->endpoint, s->bucket, url_tail);
    char sig[128];
    snprintf(sig, sizeof(sig), "aws:amz:%s:s3", s->region);
    struct curl_slist *h = curl_slist_append(NULL, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (header)
        h = curl_slist_append(h, header);
    Body b = {body, bn, 0};
    curl_easy_setopt(c, CURLOPT_URL, buf_cstr(&url));
    curl_easy_setopt(c, CURLOPT_AWS_SIGV4, sig);
    curl_easy_setopt(c, CURLOPT_USERNAME, s->key);
    curl_easy_setopt(c, CURLOPT_PASSWORD, s->secret);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(c, CURLOPT_TIMEOUT, 300L);
    /* a server that stops sending (half-open connection) is an error
       within 30 s, not a 300 s wait: callers retry or report */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, 30L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, resp ? resp : &sink);
    if (!strcmp(method, "PUT")) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(c, CURLOPT_READDATA, &b);
        curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)bn);
    } else if (strcmp(method, "GET")) {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    }
    long status = 0;
    CURLcode rc = curl_easy_perform(c);
    if (rc != CURLE_OK)
        err_set(err, SL_EIO, "S3 %s %s: %s", method, buf_cstr(&url), curl_easy_strerror(rc));
    else
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    buf_free(&url);
    buf_free(&sink);
    return status;
}

static long request(S3 *s, const char *method, const char *url_tail, const uint8_t *body,
                    size_t bn, Buf *resp, Err *err)
{
    return request_h(s, method, url_tail, body, bn, NULL, resp, err);
}

/* A failed status as an error naming the object and S3's own message. */
static int fail(long status, const char *method, const char *name, const Buf *resp, Err *err)
{
    const char *body = resp && resp->n ? buf_cstr((Buf *)resp) : "";
    const char *m = strstr(body, "<Message>");
    const char *me = m ? strstr(m, "</Message>") : NULL;
    return err_set(err, SL_EIO, "S3 %s %s: HTTP %ld%s%.*s", method, name, status,
                   me ? ": " : "", me ? (int)(me - m - 9) : 0, me ? m + 9 : "");
}

int s3_ensure_bucket(S3 *s, Err *err)
{
    Buf r = BUF_INIT;
    long st = request(s, "PUT", "", NULL, 0, &r, err);
    int rc = 0;
    if (!st)
        rc = err->code;
    else if (st != 200 && st != 409) /* 409: exists (BucketAlreadyOwnedByYou) */
        rc = fail(st, "PUT bucket", s->bucket, &r, err);
    buf_free(&r);
    return rc;
}

int s3_put(S3 *s, const char *name, const void *data, size_t n, Err *err)
{
    Buf tail = BUF_INIT, r = BUF_INIT;
    buf_printf(&tail, "/%s%s", s->prefix, name);
    long st = request(s, "PUT", buf_cstr(&tail), data, n, &r, err);
    int rc = !st ? err->code : st / 100 != 2 ? fail(st, "PUT", name, &r, err) : 0;
    buf_free(&tail);
    buf_free(&r);
    return rc;
}

int s3_get(S3 *s, const char *name, Buf *out, Err *err)
{
    Buf tail = BUF_INIT;
    buf_printf(&tail, "/%s%s", s->prefix, name);
    buf_reset(out);
    long st = request(s, "GET", buf_cstr(&tail), NULL, 0, out, err);
    int rc = !st ? err->code : st != 200 ? fail(st, "GET", name, out, err) : 0;
    buf_free(&tail);
    return rc;
}

int s3_delete(S3 *s, const char *name, Err *err)
{
    Buf tail = BUF_INIT, r = BUF_INIT;
    buf_printf(&tail, "/%s%s", s->prefix, name);
    long st = request(s, "DELETE", buf_cstr(&tail), NULL, 0, &r, err);
    int rc = !st ? err->code : (st / 100 != 2 && st != 404) ? fail(st, "DELETE", name, &r, err) : 0;
    buf_free(&tail);
    buf_free(&r);
    return rc;
}

/* Append to tail the URL-encoded s (query parameter value). */
static void url_encode(Buf *tail, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~')
            buf_append(tail, s, 1);
        else
            buf_printf(tail, "%%%02X", ch);
    }
}

/* The text of the first <tag>...</tag> at or after *pos; advances *pos. */
static char *xml_next(const char *xml, const char *tag, const char **pos)
{
    char open[64], close[64];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *a = strstr(*pos, open);
    if (!a)
        return NULL;
    a += strlen(open);
    const char *e = strstr(a, close);
    if (!e)
        return NULL;
    *pos = e + strlen(close);
    (void)xml;
    return sl_strndup(a, (size_t)(e - a));
}

/* One page of ListObjectsV2 under the prefix (after token, when given)
   into r: 0, or an SL_E* code with err set (r freed). */
static int list_page(S3 *s, const char *token, Buf *r, Err *err)
{
    Buf tail = BUF_INIT;
    buf_puts(&tail, "?list-type=2&prefix=");
    url_encode(&tail, s->prefix);
    if (token) {
        buf_puts(&tail, "&continuation-token=");
        url_encode(&tail, token);
    }
    long st = request(s, "GET", buf_cstr(&tail), NULL, 0, r, err);
    buf_free(&tail);
    if (st == 200)
        return 0;
    int rc = st ? fail(st, "LIST", s->prefix, r, err) : err->code;
    buf_free(r);
    return rc;
}

/* The continuation token of a listing page that is truncated (owned),
   else NULL: the last page. */
static char *list_next_token(const char *xml)
{
    const char *pos = xml;
    char *trunc = xml_next(xml, "IsTruncated", &pos);
    bool more = trunc && !strcmp(trunc, "true");
    sl_free(trunc);
    if (!more)
        return NULL;
    pos = xml;
    return xml_next(xml, "NextContinuationToken", &pos);
}

int s3_list(S3 *s, char ***names, int *count, Err *err)
{
    *names = NULL;
    *count = 0;
    char *token = NULL;
    int n = 0, cap = 0, rc = 0;
    char **v = NULL;
    size_t pl = strlen(s->prefix);
    for (;;) {
        Buf r = BUF_INIT;
        if ((rc = list_page(s, token, &r, err)))
            break;
        const char *xml = buf_cstr(&r), *pos = xml;
        char *k;
        while ((k = xml_next(xml, "Key", &pos)) != NULL) {
            if (strlen(k) > pl && !strchr(k + pl, '/')) {
                *VEC_PUSH(v, n, cap) = sl_strdup(k + pl);
            }
            sl_free(k);
        }
        sl_free(token);
        token = list_next_token(xml);
        buf_free(&r);
        if (!token)
            break;
    }
    sl_free(token);
    if (rc) {
        for (int i = 0; i < n; i++)
            sl_free(v[i]);
        sl_free(v);
        return rc;
    }
    *names = v;
    *count = n;
    return 0;
}

/* Append the URL-encoded key (path segments: '/' kept). */
static void path_encode(Buf *tail, const char *s)
{
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
            ch == '-' || ch == '_' || ch == '.' || ch == '~' || ch == '/')
            buf_append(tail, s, 1);
        else
            buf_printf(tail, "%%%02X", ch);
    }
}

int s3_get_range(S3 *s, const char *name, int64_t off, int64_t len, Buf *out, long *status,
                 Err *err)
{
    Buf tail = BUF_INIT;
    buf_putc(&tail, '/');
    path_encode(&tail, s->prefix);
    path_encode(&tail, name);
    char range[80];
    snprintf(range, sizeof(range), "Range: bytes=%lld-%lld", (long long)off,
             (long long)(off + len - 1));
    buf_reset(out);
    long st = request_h(s, "GET", buf_cstr(&tail), NULL, 0, range, out, err);
    *status = st;
    /* 416: the range starts at or past the end (an empty remainder) */
    int rc = !st ? err->code : st == 416 ? (buf_reset(out), 0)
           : (st != 206 && st != 200) ? fail(st, "GET", name, out, err) : 0;
    if (!rc && st == 200 && (off > 0 || (int64_t)out->n > len)) {
        /* a server that ignores Range sends the whole object: cut it */
        size_t a = off < (int64_t)out->n ? (size_t)off : out->n;
        size_t b = off + len < (int64_t)out->n ? (size_t)(off + len) : out->n;
        memmove(out->p, out->p + a, b - a);
        out->n = b - a;
    }
    buf_free(&tail);
    return rc;
}

/* XML text with the five predefined entities decoded (in place). */
static void xml_unescape(char *t)
{
    static const struct { const char *e; char c; } ents[] = {
        {"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
    char *w = t;
    for (const char *r = t; *r;) {
        bool done = false;
        if (*r == '&')
            for (size_t i = 0; i < sizeof(ents) / sizeof(ents[0]) && !done; i++)
                if (!strncmp(r, ents[i].e, strlen(ents[i].e))) {
                    *w++ = ents[i].c;
                    r += strlen(ents[i].e);
                    done = true;
                }
        if (!done)
            *w++ = *r++;
    }
    *w = 0;
}

void s3_objects_free(S3Object *objs, int count)
{
    for (int i = 0; i < count; i++)
        sl_free(objs[i].name);
    sl_free(objs);
}

int s3_list_all(S3 *s, S3Object **objs, int *count, Err *err)
{
    *objs = NULL;
    *count = 0;
    char *token = NULL;
    int n = 0, cap = 0, rc = 0;
    S3Object *v = NULL;
    size_t pl = strlen(s->prefix);
    for (;;) {
        Buf r = BUF_INIT;
        if ((rc = list_page(s, token, &r, err)))
            break;
        const char *xml = buf_cstr(&r), *pos = xml;
        char *obj;
        while ((obj = xml_next(xml, "Contents", &pos)) != NULL) {
            const char *q = obj;
            char *k = xml_next(obj, "Key", &q);
            q = obj;
            char *sz = xml_next(obj, "Size", &q);
            if (k) {
                xml_unescape(k);
                if (strlen(k) > pl && k[strlen(k) - 1] != '/') /* not a "directory" marker */
                    *VEC_PUSH(v, n, cap) = (S3Object){sl_strdup(k + pl), sz ? atoll(sz) : 0};
            }
            sl_free(k);
            sl_free(sz);
            sl_free(obj);
        }
        sl_free(token);
        token = list_next_token(xml);
        buf_free(&r);
        if (!token)
            break;
    }
    sl_free(token);
    if (rc) {
        s3_objects_free(v, n);
        return rc;
    }
    *objs = v;
    *count = n;
    return 0;
}
