/*
 * cli/client.c - HTTP/1.1 and HTTPS through libcurl (client.h). One easy
 * handle per request: the request body comes from memory or is streamed
 * from a file in blocks; the answer's status is known before its body, so
 * a 2xx body is handed to the caller's callback as it arrives (an egress
 * stream) and any other body is collected for the error message. TLS is
 * verified against the system trust store or --cacert FILE, unless
 * --insecure.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client.h"

int http_url_parse(const char *url, HttpUrl *u, Err *err)
{
    const char *p = url;
    memset(u, 0, sizeof(*u));
    if (!strncmp(p, "http://", 7)) {
        p += 7;
    } else if (!strncmp(p, "https://", 8)) {
        p += 8;
        u->tls = true;
    } else if (strstr(p, "://")) {
        return err_set(err, SL_ECONFIG, "only http:// and https:// URLs are supported, not \"%s\"",
                       url);
    }
    const char *end = p + strcspn(p, "/");
    const char *colon = end > p && end[-1] != ']' ? memrchr(p, ':', (size_t)(end - p)) : NULL;
    if (!colon)
        return err_set(err, SL_ECONFIG, "the URL \"%s\" needs a port (http://HOST:PORT)", url);
    size_t hn = (size_t)(colon - p), pn = (size_t)(end - colon - 1);
    if (hn >= sizeof(u->host) || pn == 0 || pn >= sizeof(u->port))
        return err_set(err, SL_ECONFIG, "bad URL \"%s\" (expected http://HOST:PORT)", url);
    if (hn)
        memcpy(u->host, p, hn);
    else
        memcpy(u->host, "127.0.0.1", hn = 9);
    u->host[hn] = 0;
    memcpy(u->port, colon + 1, pn);
    u->port[pn] = 0;
    size_t fn = strcspn(end, "?#");
    while (fn && end[fn - 1] == '/')
        fn--;
    if (fn >= sizeof(u->prefix))
        return err_set(err, SL_ECONFIG, "the URL \"%s\" has too long a path", url);
    memcpy(u->prefix, end, fn);
    u->prefix[fn] = 0;
    return 0;
}

void http_escape(Buf *out, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
            c == '-' || c == '_' || c == '.' || c == '~') {
            buf_putc(out, (char)c);
        } else {
            buf_putc(out, '%');
            buf_putc(out, hex[c >> 4]);
            buf_putc(out, hex[c & 15]);
        }
    }
}

typedef struct Call {
    const HttpReq *rq;
    HttpResp *resp;
    CURL *h;
    size_t sent;            /* bytes of an in-memory body already given */
} Call;

static size_t on_write(char *p, size_t size, size_t n, void *arg)
{
    Call *c = arg;
    size_t k = size * n;
    long status = 0;
    curl_easy_getinfo(c->h, CURLINFO_RESPONSE_CODE, &status);
    c->resp->status = (int)status;
    if (c->rq->on_data && status >= 200 && status < 300)
        c->rq->on_data(c->rq->arg, p, k);
    else
        buf_append(&c->resp->body, p, k);
    return k;
}

static size_t on_read(char *p, size_t size, size_t n, void *arg)
{
    Call *c = arg;
    size_t room = size * n;
    if (c->rq->body_file)
        return fread(p, 1, room, c->rq->body_file);
    size_t k = c->rq->body_len - c->sent;
    if (k > room)
        k = room;
    memcpy(p, c->rq->body + c->sent, k);
    c->sent += k;
    return k;
}

int http_do(const HttpUrl *u, const HttpReq *rq, HttpResp *resp, Err *err)
{
    memset(resp, 0, sizeof(*resp));
    CURL *h = curl_easy_init();
    if (!h)
        return err_set(err, SL_EIO, "cannot start an HTTP client (libcurl)");
    Call c = {rq, resp, h, 0};
    Buf url = BUF_INIT, auth = BUF_INIT;
    char errbuf[CURL_ERROR_SIZE] = "";
    buf_printf(&url, "%s://%s:%s%s%s", u->tls ? "https" : "http", u->host, u->port, u->prefix,
               rq->target);
    struct curl_slist *hdr = NULL;
    if (rq->ctype) {
        Buf ct = BUF_INIT;
        buf_printf(&ct, "Content-Type: %s", rq->ctype);
        hdr = curl_slist_append(hdr, buf_cstr(&ct));
        buf_free(&ct);
    }
    if (u->api_key) {
        buf_printf(&auth, "Authorization: Bearer %s", u->api_key);
        hdr = curl_slist_append(hdr, buf_cstr(&auth));
    }
    hdr = curl_slist_append(hdr, "Expect:"); /* no 100-continue round trip */
    curl_easy_setopt(h, CURLOPT_URL, buf_cstr(&url));
    curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, rq->method);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_write);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &c);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L);
    if (rq->body || rq->body_file) {
        curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(h, CURLOPT_READFUNCTION, on_read);
        curl_easy_setopt(h, CURLOPT_READDATA, &c);
        curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)rq->body_len);
    } else if (strcmp(rq->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, 0L);
    }
    if (u->tls) {
        if (u->cacert)
            curl_easy_setopt(h, CURLOPT_CAINFO, u->cacert);
        if (u->insecure) {
            curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 0L);
            curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 0L);
        }
    }
    CURLcode rc = curl_easy_perform(h);
    int ret = 0;
    if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
        ret = err_set(err, SL_EIO, "cannot connect to %s:%s: %s (is `sluice run --http` up?)",
                      u->host, u->port, *errbuf ? errbuf : curl_easy_strerror(rc));
    else if (rc == CURLE_PEER_FAILED_VERIFICATION || rc == CURLE_SSL_CACERT_BADFILE ||
             rc == CURLE_SSL_CONNECT_ERROR)
        ret = err_set(err, SL_EIO, "TLS with %s:%s failed: %s (give --cacert FILE for a "
                                   "self-signed certificate, or --insecure)",
                      u->host, u->port, *errbuf ? errbuf : curl_easy_strerror(rc));
    else if (rc != CURLE_OK)
        ret = err_set(err, SL_EIO, "HTTP request to %s:%s failed: %s", u->host, u->port,
                      *errbuf ? errbuf : curl_easy_strerror(rc));
    long status = 0;
    curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
    if (!ret && status == 0)
        ret = err_set(err, SL_EIO, "no HTTP answer from %s:%s", u->host, u->port);
    resp->status = (int)status;
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    buf_free(&url);
    buf_free(&auth);
    return ret;
}
