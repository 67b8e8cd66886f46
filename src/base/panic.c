/*
 * base/panic.c - sl_panic: message, backtrace, abort; and the counted fault
 * points tests set with SLUICE_CRASH_AT (every layer may have one).
 */
#include "base.h"

#include <execinfo.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* SLUICE_CRASH_AT=<point>:<N>[@<rank>] names a counted point ("after-step:N"
   is step N): due when n == N (or, with at_least, n >= N), on MPI rank
   <rank> only when given. */
bool sl_crash_count_due(const char *point, int64_t n, bool at_least)
{
    const char *at = getenv("SLUICE_CRASH_AT");
    size_t pn = strlen(point);
    if (!at || strncmp(at, point, pn) != 0 || at[pn] != ':')
        return false;
    char *end;
    long long want = strtoll(at + pn + 1, &end, 10);
    if (*end == '@') {
        const char *rank = getenv("OMPI_COMM_WORLD_RANK");
        if (atoi(end + 1) != (rank ? atoi(rank) : 0))
            return false;
    }
    return at_least ? n >= want : n == want;
}
