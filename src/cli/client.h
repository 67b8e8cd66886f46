/*
 * cli/client.h - a minimal HTTP/1.1 client (libcurl) for the
 * `sluice query|push|tail|stats` subcommands: one request per connection,
 * http:// or https:// (system trust store, --cacert FILE, or --insecure),
 * an optional API key (Authorization: Bearer), request bodies streamed
 * from memory or a file, responses read whole or handed over piece by
 * piece as they arrive.
 */
#ifndef SL_CLI_CLIENT_H
#define SL_CLI_CLIENT_H

#include <stdio.h>

#include "../base/buf.h"
#include "../base/err.h"

typedef struct HttpUrl {
    char host[256];
    char port[16];
    bool tls;               /* https:// */
    char prefix[512];       /* the URL's path without a trailing '/' (a
                               pipeline through a manager:
                               /v0/pipelines/NAME), put before each target */
    /* Set by the caller after parsing (all optional): */
    const char *api_key;    /* sent as Authorization: Bearer KEY */
    const char *cacert;     /* PEM file of the CA (or self-signed cert) to trust */
    bool insecure;          /* https without verifying the server's certificate */
} HttpUrl;

/* "http://HOST:PORT", "https://HOST:PORT", "HOST:PORT" or ":PORT"
   (127.0.0.1), optionally followed by a path that prefixes every request
   (http://HOST:PORT/v0/pipelines/NAME). 0 or SL_ECONFIG. */
int http_url_parse(const char *url, HttpUrl *u, Err *err);

typedef struct HttpReq {
    const char *method;
    const char *target;     /* path and query, already encoded */
    const char *ctype;      /* Content-Type of the body, or NULL */
    const char *body;       /* body in memory, or NULL */
    size_t body_len;
    FILE *body_file;        /* or streamed from a file of body_len bytes */
    /* When set, every piece of a 2xx response's body goes here as it
       arrives instead of into the response's body buffer. */
    void (*on_data)(void *arg, const char *p, size_t n);
    void *arg;
} HttpReq;

typedef struct HttpResp {
    int status;
    Buf body;
} HttpResp;

/* Send rq and read the answer. 0, or SL_EIO with err set (connect, send,
   malformed answer). The caller frees resp->body. */
int http_do(const HttpUrl *u, const HttpReq *rq, HttpResp *resp, Err *err);

/* Append s percent-encoded for a query string. */
void http_escape(Buf *out, const char *s);

#endif
