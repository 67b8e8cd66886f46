/*
 * base/mem.h - allocation that never returns NULL (on out-of-memory the
 * process ends with a message naming what the thread was doing and exit
 * status MEM_EXIT_OOM), and the process's resident memory for progress
 * reports.
 */
#ifndef SL_BASE_MEM_H
#define SL_BASE_MEM_H

#include "base.h"

void *sl_malloc(size_t n);
void *sl_calloc(size_t count, size_t size);
void *sl_realloc(void *p, size_t n);
void sl_free(void *p);
char *sl_strdup(const char *s);
char *sl_strndup(const char *s, size_t n);

/* The exit status of a process that ran out of memory. */
#define MEM_EXIT_OOM 3
/* Describe what the calling thread does now, for the out-of-memory
   message: what is a printf format with up to two %lld (a and b), e.g.
   ("running step %lld in operator node %lld", step, node). A string
   literal: it is kept, not copied. */
void mem_set_doing(const char *what, int64_t a, int64_t b);

/* Resident set size now and at its peak (bytes), from /proc/self/status. */
size_t mem_rss_bytes(void);
size_t mem_peak_rss_bytes(void);

#endif
