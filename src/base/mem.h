/*
 * base/mem.h - allocation that never returns NULL (abort with a message on
 * out-of-memory), and the process's resident memory for progress reports.
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

/* Resident set size now and at its peak (bytes), from /proc/self/status. */
size_t mem_rss_bytes(void);
size_t mem_peak_rss_bytes(void);

#endif
