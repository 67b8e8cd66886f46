/*
 * base/buf.c - growable byte buffer.
 */
#include "buf.h"

#include <stdarg.h>
#include <stdio.h>

#include "mem.h"
#include "vec.h"

/* Out of line, so that buf_reserve's common case saves no register. */
static __attribute__((noinline)) void buf_grow(Buf *b, size_t need)
{
    VEC_RESERVE(b->p, b->cap, need); /* first 256 bytes, then doubling */
}

void buf_reserve(Buf *b, size_t extra)
{
    if (b->n + extra > b->cap)
        buf_grow(b, b->n + extra);
}

void buf_append(Buf *b, const void *data, size_t n)
{
    buf_reserve(b, n);
    if (n)
        memcpy(b->p + b->n, data, n);
    b->n += n;
}

void buf_putc(Buf *b, char c)
{
    buf_reserve(b, 1);
    b->p[b->n++] = (uint8_t)c;
}

void buf_puts(Buf *b, const char *s) { buf_append(b, s, strlen(s)); }

void buf_vprintf(Buf *b, const char *fmt, va_list ap)
{
    va_list again;
    int n;
    buf_reserve(b, 64);
    va_copy(again, ap);
    n = vsnprintf((char *)b->p + b->n, b->cap - b->n, fmt, ap);
    if ((size_t)n >= b->cap - b->n) {
        buf_reserve(b, (size_t)n + 1);
        vsnprintf((char *)b->p + b->n, b->cap - b->n, fmt, again);
    }
    va_end(again);
    b->n += (size_t)n;
}

void buf_printf(Buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    buf_vprintf(b, fmt, ap);
    va_end(ap);
}

void buf_free(Buf *b)
{
    sl_free(b->p);
    b->p = NULL;
    b->n = b->cap = 0;
}

const char *buf_cstr(Buf *b)
{
    buf_reserve(b, 1);
    b->p[b->n] = 0;
    return (const char *)b->p;
}
