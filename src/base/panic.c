/*
 * base/panic.c - sl_panic: message, backtrace, abort.
 */
#include "base.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

void sl_panic(const char *fmt, ...)
{
    va_list ap;
    void *frames[64];
    int n;
    fprintf(stderr, "sluice: internal error: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    n = backtrace(frames, 64);
    backtrace_symbols_fd(frames, n, 2);
    abort();
}
