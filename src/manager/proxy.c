/*
 * manager/proxy.c - a pipeline's own API through the manager: a request
 * for /v0/pipelines/NAME/<endpoint> is sent (libcurl) to the child's
 * 127.0.0.1:PORT/<endpoint> with the same method, query arguments, body
 * and Content-Type, and the answer comes back with the child's status,
 * Content-Type and body. The body streams: the response is built as soon
 * as the child's headers are in, and each piece of its body is passed on
 * as it arrives (libmicrohttpd pulls through a content reader that drives
 * a curl multi handle on the connection's own thread), so /egress change
 * streams and large /query answers flow without being held whole. The
 * request's body is read whole first (api.c bounds it). Every request to
 * a child carries its own API key (supervise.c), so the manager's gate is
 * not bypassed through the child's port.
 */
#include <curl/curl.h>
#include <stdio.h>
#include <string.h>

#include "../base/mem.h"
#include "mgr_int.h"

typedef struct Proxy {
    CURLM *multi;
    CURL *easy;
    struct curl_slist *hdrs;
    Buf body;               /* the request's body, kept until the end */
    Buf in;                 /* response bytes received, from off on not yet sent */
    size_t off;
    char ctype[256];
    bool headers_done;
    bool done;              /* the transfer ended */
    CURLcode result;
} Proxy;

static size_t on_data(char *p, size_t size, size_t nmemb, void *arg)
{
    Proxy *x = arg;
    buf_append(&x->in, p, size * nmemb);
    x->headers_done = true;
    return size * nmemb;
}

static size_t on_header(char *p, size_t size, size_t nmemb, void *arg)
{
    Proxy *x = arg;
    size_t n = size * nmemb;
    if (n >= 13 && !strncasecmp(p, "Content-Type:", 13)) {
        const char *v = p + 13;
        while (*v == ' ')
            v++;
        size_t k = n - (size_t)(v - p);
        while (k && (v[k - 1] == '\r' || v[k - 1] == '\n'))
            k--;
        snprintf(x->ctype, sizeof(x->ctype), "%.*s", (int)k, v);
    } else if (n <= 2 && (p[0] == '\r' || p[0] == '\n')) {
        long code = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
        if (code >= 200) /* not a 100 Continue */
            x->headers_done = true;
    }
    return n;
}

/* Run the transfer for at most ms; sets done and result when it ends. */
static void drive(Proxy *x, int ms)
{
    int running = 0;
    curl_multi_perform(x->multi, &running);
    if (running && !x->headers_done && ms > 0) {
        curl_multi_poll(x->multi, NULL, 0, ms, NULL);
        curl_multi_perform(x->multi, &running);
    }
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(x->multi, &left)))
        if (msg->msg == CURLMSG_DONE) {
            x->done = true;
            x->result = msg->data.result;
        }
    if (!running)
        x->done = true;
}

static void proxy_free(void *arg)
{
    Proxy *x = arg;
    if (x->multi) {
        curl_multi_remove_handle(x->multi, x->easy);
        curl_multi_cleanup(x->multi);
    }
    curl_easy_cleanup(x->easy);
    curl_slist_free_all(x->hdrs);
    buf_free(&x->body);
    buf_free(&x->in);
    sl_free(x);
}

static ssize_t reader(void *arg, uint64_t pos, char *out, size_t max)
{
    Proxy *x = arg;
    (void)pos;
    for (;;) {
        if (x->off < x->in.n) {
            size_t k = x->in.n - x->off < max ? x->in.n - x->off : max;
            memcpy(out, x->in.p + x->off, k);
            x->off += k;
            if (x->off == x->in.n)
                x->off = x->in.n = 0;
            return (ssize_t)k;
        }
        if (x->done)
            return x->result == CURLE_OK ? MHD_CONTENT_READER_END_OF_STREAM
                                         : MHD_CONTENT_READER_END_WITH_ERROR;
        curl_multi_poll(x->multi, NULL, 0, 200, NULL);
        drive(x, 0);
    }
}

typedef struct ArgCtx {
    CURL *easy;
    Buf *url;
    int n;
} ArgCtx;

static enum MHD_Result add_arg(void *cls, enum MHD_ValueKind kind, const char *key,
                               const char *value)
{
    ArgCtx *a = cls;
    (void)kind;
    char *k = curl_easy_escape(a->easy, key, 0);
    buf_putc(a->url, a->n++ ? '&' : '?');
    buf_puts(a->url, k);
    curl_free(k);
    if (value) {
        char *v = curl_easy_escape(a->easy, value, 0);
        buf_putc(a->url, '=');
        buf_puts(a->url, v);
        curl_free(v);
    }
    return MHD_YES;
}

int proxy_forward(struct MHD_Connection *c, int port, const char *key, const char *method,
                  const char *rest, const char *ctype, const Buf *body)
{
    Proxy *x = sl_calloc(1, sizeof(*x));
    x->easy = curl_easy_init();
    x->multi = curl_multi_init();
    if (!x->easy || !x->multi) {
        proxy_free(x);
        return api_error(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "InternalError", NULL,
                         "cannot set up the request to the pipeline");
    }
    Buf url = BUF_INIT;
    buf_printf(&url, "http://127.0.0.1:%d/", port);
    char *path = curl_easy_escape(x->easy, rest, 0);
    /* keep '/' inside the rest of the path (e.g. egress/VIEW) readable */
    for (const char *s = path; *s; s++)
        if (!strncmp(s, "%2F", 3)) {
            buf_putc(&url, '/');
            s += 2;
        } else
            buf_putc(&url, *s);
    curl_free(path);
    ArgCtx a = {x->easy, &url, 0};
    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg, &a);
    curl_easy_setopt(x->easy, CURLOPT_URL, buf_cstr(&url));
    curl_easy_setopt(x->easy, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(x->easy, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(x->easy, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(x->easy, CURLOPT_WRITEDATA, x);
    curl_easy_setopt(x->easy, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(x->easy, CURLOPT_HEADERDATA, x);
    x->hdrs = curl_slist_append(x->hdrs, "Expect:");
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    x->hdrs = curl_slist_append(x->hdrs, auth);
    if (ctype) {
        char h[300];
        snprintf(h, sizeof(h), "Content-Type: %.250s", ctype);
        x->hdrs = curl_slist_append(x->hdrs, h);
    }
    curl_easy_setopt(x->easy, CURLOPT_HTTPHEADER, x->hdrs);
    if (!strcmp(method, "GET")) {
        curl_easy_setopt(x->easy, CURLOPT_HTTPGET, 1L);
    } else if (!strcmp(method, "HEAD")) {
        curl_easy_setopt(x->easy, CURLOPT_NOBODY, 1L);
    } else {
        buf_append(&x->body, body->p ? body->p : (const uint8_t *)"", body->n);
        curl_easy_setopt(x->easy, CURLOPT_POST, 1L);
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDS, x->body.p ? (char *)x->body.p : "");
        curl_easy_setopt(x->easy, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)x->body.n);
        if (strcmp(method, "POST"))
            curl_easy_setopt(x->easy, CURLOPT_CUSTOMREQUEST, method);
    }
    buf_free(&url);
    curl_multi_add_handle(x->multi, x->easy);
    while (!x->headers_done && !x->done)
        drive(x, 1000);
    long code = 0;
    curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &code);
    if (x->done && (x->result != CURLE_OK || code == 0)) {
        CURLcode r = x->result;
        proxy_free(x);
        return api_error(c, MHD_HTTP_SERVICE_UNAVAILABLE, "PipelineUnavailable", NULL,
                         "the pipeline's process does not answer (%s); it is being restarted: "
                         "retry later",
                         curl_easy_strerror(r));
    }
    /* a change stream may be quiet for long: no idle timeout while it flows */
    MHD_set_connection_option(c, MHD_CONNECTION_OPTION_TIMEOUT, 0u);
    struct MHD_Response *resp =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 64 * 1024, reader, x, proxy_free);
    if (*x->ctype)
        MHD_add_response_header(resp, "Content-Type", x->ctype);
    int rc = MHD_queue_response(c, (unsigned)code, resp) == MHD_YES ? 0 : -1;
    MHD_destroy_response(resp);
    return rc;
}

int sup_child_post(int port, const char *key, const char *path)
{
    CURL *e = curl_easy_init();
    if (!e)
        return -1;
    char url[256];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", port, path);
    Buf sink = BUF_INIT;
    Proxy x = {0};
    x.easy = e;
    char auth[128];
    snprintf(auth, sizeof(auth), "Authorization: Bearer %s", key);
    struct curl_slist *h = curl_slist_append(NULL, auth);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 60L);
    curl_easy_setopt(e, CURLOPT_POST, 1L);
    curl_easy_setopt(e, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, 0L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
    CURLcode r = curl_easy_perform(e);
    long code = -1;
    if (r == CURLE_OK)
        curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    curl_slist_free_all(h);
    buf_free(&x.in);
    buf_free(&sink);
    return (int)code;
}
