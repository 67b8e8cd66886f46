/*
 * base/err.c - filling Err records; first error wins.
 */
#include "err.h"

#include <stdarg.h>
#include <stdio.h>

static int vset(Err *err, int code, int line, int col, const char *fmt, va_list ap)
{
    if (!err || err->code)
        return code;
    err->code = code;
    err->line = line;
    err->col = col;
    vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
    return code;
}

int err_set(Err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, 0, 0, fmt, ap);
    va_end(ap);
    return code;
}

int err_setpos(Err *err, int code, int line, int col, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vset(err, code, line, col, fmt, ap);
    va_end(ap);
    return code;
}

void err_clear(Err *err)
{
    if (err) {
        err->code = 0;
        err->line = err->col = 0;
        err->msg[0] = 0;
    }
}

const char *err_kind(int code)
{
    switch (code) {
    case SL_OK: return "ok";
    case SL_EPARSE: return "syntax error";
    case SL_ESEMANTIC: return "error";
    case SL_EUNSUPPORTED: return "unsupported";
    case SL_ECONFIG: return "configuration error";
    case SL_EIO: return "i/o error";
    case SL_EDATA: return "data error";
    case SL_ERUNTIME: return "runtime error";
    }
    return "error";
}
