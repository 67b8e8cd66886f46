/*
 * base/err.h - error codes and the Err record that carries a message
 * (and, for SQL, a line and column) back to whoever can show it.
 * Actions return 0 or a negative SL_E* code; details go to a caller-supplied
 * Err (which may be NULL). The first error set on an Err wins.
 */
#ifndef SL_BASE_ERR_H
#define SL_BASE_ERR_H

#include "base.h"

enum {
    SL_OK = 0,
    SL_EPARSE = -1,       /* malformed SQL text */
    SL_ESEMANTIC = -2,    /* unknown name, type mismatch, ... */
    SL_EUNSUPPORTED = -3, /* valid SQL we do not support yet */
    SL_ECONFIG = -4,      /* bad connector JSON, bad flag */
    SL_EIO = -5,          /* file or socket failure */
    SL_EDATA = -6,        /* malformed input row or value */
    SL_ERUNTIME = -7,     /* overflow, bad cast at run time */
};

typedef struct Err {
    int code;       /* 0 when no error has been set */
    int line, col;  /* 1-based position in the SQL text, 0 when none */
    char msg[1024];
} Err;

/* Set the error (if err is non-NULL and no error is set yet); returns code. */
__attribute__((format(printf, 3, 4)))
int err_set(Err *err, int code, const char *fmt, ...);
/* Same, with a position in the SQL text. */
__attribute__((format(printf, 5, 6)))
int err_setpos(Err *err, int code, int line, int col, const char *fmt, ...);
void err_clear(Err *err);
/* Ready e for use without clearing its 1 KiB message (for per-row paths,
   where `Err e = {0}` would cost a memset per row). */
static inline void err_init(Err *e)
{
    e->code = 0;
    e->line = e->col = 0;
    e->msg[0] = 0;
}
/* "parse error", "unsupported", ... */
const char *err_kind(int code);

#endif
