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

/*
 * Large blocks (batches of MBs, base/mem.c): mappings of their own. A
 * freed one is kept in a pool with its pages mapped, and the next large
 * allocation takes pooled pages (cut, grown, or several moved next to
 * each other with mremap), so a trace merge's output lands in the pages
 * of the runs the previous step's merges retired, all of them, instead
 * of fresh pages the kernel must clear first. Pooled pages that no
 * allocation took for four steps (mem_big_tick) go back to the system,
 * as all do on mem_big_trim (the
 * memory budget's, beside malloc_trim). mem_big_alloc's block is
 * 16-aligned; free it with mem_big_free only. With AddressSanitizer
 * these are malloc blocks (its leak check sees them) unless a test turns
 * the pool on (mem_big_use_pool).
 */
#define MEM_BIG_MIN ((size_t)1 << 20) /* smaller blocks: use sl_malloc */
void *mem_big_alloc(size_t n);
/* p (from mem_big_alloc) cut or grown to n bytes, its first min(old, n) kept. */
void *mem_big_realloc(void *p, size_t n);
void mem_big_free(void *p);
/* A step ended: pooled blocks unused for MEM_BIG_AGE ticks are unmapped. */
void mem_big_tick(void);
/* Unmap every pooled block. */
void mem_big_trim(void);
/* Bytes held in the pool (resident, not in use). */
size_t mem_big_pooled(void);
void mem_big_use_pool(bool on);
/* Bytes of fresh pages the large blocks mapped so far (the pool's misses). */
size_t mem_big_fresh(void);
/* The pieces block p is made of (1: one mapping; tests). */
int mem_big_pieces(const void *p);

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
