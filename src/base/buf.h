/*
 * base/buf.h - growable byte buffer for encoding, formatting and I/O.
 */
#ifndef SL_BASE_BUF_H
#define SL_BASE_BUF_H

#include <stdarg.h>

#include "base.h"

typedef struct Buf {
    uint8_t *p;
    size_t n, cap;
} Buf;

#define BUF_INIT {NULL, 0, 0}

void buf_reserve(Buf *b, size_t extra);
void buf_append(Buf *b, const void *data, size_t n);
void buf_putc(Buf *b, char c);
void buf_puts(Buf *b, const char *s);
__attribute__((format(printf, 2, 3)))
void buf_printf(Buf *b, const char *fmt, ...);
__attribute__((format(printf, 2, 0)))
void buf_vprintf(Buf *b, const char *fmt, va_list ap);
static inline void buf_reset(Buf *b) { b->n = 0; }
void buf_free(Buf *b);
/* NUL-terminates (not counted in n) and returns the data as a C string. */
const char *buf_cstr(Buf *b);

#endif
