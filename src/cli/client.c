/*
 * cli/client.c - HTTP/1.1 over a TCP socket (client.h). The request is
 * written as a head plus a Content-Length body (from memory or streamed
 * from a file in 64 KiB blocks); the answer's head is parsed for the
 * status and the body framing (chunked, Content-Length, or up to the
 * close), and the body is decoded as it arrives.
 */
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

int http_url_parse(const char *url, HttpUrl *u, Err *err)
{
    const char *p = url;
    if (!strncmp(p, "http://", 7))
        p += 7;
    else if (strstr(p, "://"))
        return err_set(err, SL_ECONFIG, "only http:// URLs are supported, not \"%s\"", url);
    const char *end = p + strcspn(p, "/");
    const char *colon = memchr(p, ':', (size_t)(end - p));
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

static int send_all(int fd, const char *p, size_t n, Err *err)
{
    while (n) {
        ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return err_set(err, SL_EIO, "cannot send the request: %s", strerror(errno));
        p += k;
        n -= (size_t)k;
    }
    return 0;
}

static int dial(const HttpUrl *u, Err *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    int rc = getaddrinfo(u->host, u->port, &hints, &res);
    if (rc)
        return err_set(err, SL_EIO, "cannot resolve %s: %s", u->host, gai_strerror(rc));
    int fd = -1, saved = 0;
    for (struct addrinfo *a = res; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype, a->ai_protocol);
        if (fd < 0)
            continue;
        if (connect(fd, a->ai_addr, a->ai_addrlen)) {
            saved = errno;
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(res);
    if (fd < 0)
        return err_set(err, SL_EIO, "cannot connect to %s:%s: %s (is `sluice run --http` up?)",
                       u->host, u->port, strerror(saved));
    return fd;
}

typedef struct Reader {
    int fd;
    char buf[65536];
    size_t pos, len;
    bool eof;
} Reader;

/* Make at least one unread byte available; false at the end. */
static bool fill(Reader *r)
{
    if (r->pos < r->len)
        return true;
    if (r->eof)
        return false;
    for (;;) {
        ssize_t k = recv(r->fd, r->buf, sizeof(r->buf), 0);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            r->eof = true;
            return false;
        }
        r->pos = 0;
        r->len = (size_t)k;
        return true;
    }
}

/* One line (CRLF or LF stripped) into line; false at the end. */
static bool read_line(Reader *r, Buf *line)
{
    buf_reset(line);
    while (fill(r)) {
        char *nl = memchr(r->buf + r->pos, '\n', r->len - r->pos);
        size_t n = nl ? (size_t)(nl - (r->buf + r->pos)) : r->len - r->pos;
        buf_append(line, r->buf + r->pos, n);
        r->pos += n + (nl != NULL);
        if (nl) {
            if (line->n && line->p[line->n - 1] == '\r')
                line->n--;
            buf_cstr(line);
            return true;
        }
    }
    buf_cstr(line);
    return line->n > 0;
}

static void emit(const HttpReq *rq, HttpResp *resp, const char *p, size_t n)
{
    if (rq->on_data && resp->status >= 200 && resp->status < 300)
        rq->on_data(rq->arg, p, n);
    else
        buf_append(&resp->body, p, n);
}

/* Up to n bytes of body (n < 0: to the end). */
static void copy_body(Reader *r, const HttpReq *rq, HttpResp *resp, int64_t n)
{
    while ((n < 0 || n > 0) && fill(r)) {
        size_t k = r->len - r->pos;
        if (n >= 0 && (int64_t)k > n)
            k = (size_t)n;
        emit(rq, resp, r->buf + r->pos, k);
        r->pos += k;
        if (n > 0)
            n -= (int64_t)k;
    }
}

int http_do(const HttpUrl *u, const HttpReq *rq, HttpResp *resp, Err *err)
{
    memset(resp, 0, sizeof(*resp));
    int fd = dial(u, err);
    if (fd < 0)
        return err->code;
    Buf head = BUF_INIT;
    buf_printf(&head, "%s %s HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n", rq->method,
               rq->target, u->host, u->port);
    if (rq->ctype)
        buf_printf(&head, "Content-Type: %s\r\n", rq->ctype);
    buf_printf(&head, "Content-Length: %zu\r\n\r\n", rq->body || rq->body_file ? rq->body_len : 0);
    int rc = send_all(fd, (const char *)head.p, head.n, err);
    if (!rc && rq->body)
        rc = send_all(fd, rq->body, rq->body_len, err);
    if (!rc && rq->body_file) {
        char blk[65536];
        size_t left = rq->body_len, k;
        while (!rc && left && (k = fread(blk, 1, left < sizeof(blk) ? left : sizeof(blk),
                                         rq->body_file)) > 0) {
            rc = send_all(fd, blk, k, err);
            left -= k;
        }
        if (!rc && left)
            rc = err_set(err, SL_EIO, "the file ended %zu bytes early", left);
    }
    Reader *r = calloc(1, sizeof(*r));
    Buf line = BUF_INIT;
    if (!rc && !r)
        rc = err_set(err, SL_EIO, "out of memory");
    if (!rc) {
        r->fd = fd;
        if (!read_line(r, &line) || sscanf((const char *)line.p, "HTTP/%*d.%*d %d",
                                           &resp->status) != 1)
            rc = err_set(err, SL_EIO, "no HTTP answer from %s:%s", u->host, u->port);
    }
    bool chunked = false;
    int64_t length = -1;
    while (!rc && read_line(r, &line) && line.n) {
        const char *l = (const char *)line.p;
        if (!strncasecmp(l, "Transfer-Encoding:", 18) && strcasestr(l + 18, "chunked"))
            chunked = true;
        else if (!strncasecmp(l, "Content-Length:", 15))
            length = atoll(l + 15);
    }
    if (!rc && chunked) {
        for (;;) {
            if (!read_line(r, &line))
                break;
            long long n = strtoll((const char *)line.p, NULL, 16);
            if (n <= 0)
                break;
            copy_body(r, rq, resp, n);
            read_line(r, &line); /* the CRLF after the chunk */
        }
    } else if (!rc) {
        copy_body(r, rq, resp, length);
    }
    buf_free(&line);
    buf_free(&head);
    free(r);
    close(fd);
    return rc;
}
