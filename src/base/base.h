/*
 * base/base.h - fixed-width types and the few macros every module uses.
 * Includes nothing from src/.
 */
#ifndef SL_BASE_BASE_H
#define SL_BASE_BASE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define SL_MIN(a, b) ((a) < (b) ? (a) : (b))
#define SL_MAX(a, b) ((a) > (b) ? (a) : (b))

/* Log an impossible state with a backtrace and abort. Never for user input. */
__attribute__((noreturn, format(printf, 1, 2)))
void sl_panic(const char *fmt, ...);
/* Tests' counted fault points: whether SLUICE_CRASH_AT=<point>:<N>[@<rank>]
   is due at n (n == N, or n >= N with at_least). */
bool sl_crash_count_due(const char *point, int64_t n, bool at_least);

/*
 * ALWAYS(X) and NEVER(X) (SQLite's): an invariant that the code after them
 * can nevertheless survive being false. Write
 *     if (NEVER(n < 0)) return SL_ERUNTIME;   (the recovery is still coded)
 *     if (!ALWAYS(p != NULL)) return 0;
 * In debug builds (-DSL_DEBUG: build/debug, build/fuzz, build/tsan) a
 * broken invariant panics (sl_panic: file, line, the expression, a
 * backtrace) so that tests and fuzzers stop at the first sign of it; in
 * release builds X is evaluated once and its value returned, so the
 * recovery path runs instead of an abort in production. Use assert() when
 * there is no sensible recovery, sl_panic() for states that must stop the
 * process, and errors (never these) for anything user input can cause.
 */
#ifdef SL_DEBUG
#define ALWAYS(X) \
    (likely(X) ? 1 : (sl_panic("%s:%d: ALWAYS(%s) does not hold", __FILE__, __LINE__, #X), 0))
#define NEVER(X) \
    (unlikely(X) ? (sl_panic("%s:%d: NEVER(%s) happened", __FILE__, __LINE__, #X), 1) : 0)
#else
#define ALWAYS(X) likely(X)
#define NEVER(X) unlikely(X)
#endif

#endif
