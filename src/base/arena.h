/*
 * base/arena.h - bump allocator with reset, for memory whose lifetime is a
 * step (per-worker step arenas) or a compiled plan (AST, plan nodes).
 * Not thread-safe: one owner thread.
 */
#ifndef SL_BASE_ARENA_H
#define SL_BASE_ARENA_H

#include "base.h"

typedef struct Arena Arena;

Arena *arena_new(size_t block_size);
void arena_free(Arena *a);
/* 16-byte aligned, uninitialised; never NULL. */
void *arena_alloc(Arena *a, size_t n);
void *arena_zalloc(Arena *a, size_t n);
char *arena_strndup(Arena *a, const char *s, size_t n);
/* Forget every allocation; keeps the first block for reuse. */
void arena_reset(Arena *a);
/* arena_reset, then free spare blocks (the smallest first) until a holds
   at most `keep` bytes (the current block, the largest, always stays):
   a step arena under a memory limit gives back what its largest step
   took once its steps take less. */
void arena_reset_keep(Arena *a, size_t keep);
/* An arena for another thread to fill (a parser's), stocked with spare
   blocks taken from parent until it holds at least `want` bytes of them;
   only the caller's thread may touch parent until arena_adopt. */
Arena *arena_borrow(Arena *parent, size_t want);
/* Give src's blocks to dst and free src: its allocations live until dst
   is reset or freed, its unused spares become dst's. */
void arena_adopt(Arena *dst, Arena *src);
/* Bytes handed out since the last reset. */
size_t arena_used(const Arena *a);
/* Bytes of the blocks a holds (used or kept for reuse). */
size_t arena_held(const Arena *a);

#endif
