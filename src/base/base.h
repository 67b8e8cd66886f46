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

#endif
