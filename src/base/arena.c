/*
 * base/arena.c - bump allocator over a list of blocks. Large requests get a
 * block of their own. Reset keeps the blocks as spares for the next round,
 * so a step arena stops allocating (and page-faulting) once it has seen its
 * largest step; arena_free returns everything.
 */
#include "arena.h"

#include "mem.h"

typedef struct Block {
    struct Block *next;
    size_t size, used;
    _Alignas(16) unsigned char data[];
} Block;

struct Arena {
    Block *head;       /* current block (newest first) */
    Block *spare;      /* blocks kept by arena_reset for reuse */
    size_t block_size; /* default size of new blocks */
    size_t used;       /* bytes handed out since reset */
};

static Block *block_new(size_t size)
{
    Block *b = sl_malloc(sizeof(*b) + size);
    b->next = NULL;
    b->size = size;
    b->used = 0;
    return b;
}

Arena *arena_new(size_t block_size)
{
    Arena *a = sl_malloc(sizeof(*a));
    a->block_size = block_size ? block_size : 64 * 1024;
    a->head = block_new(a->block_size);
    a->spare = NULL;
    a->used = 0;
    return a;
}

/* A block of at least size bytes: a spare one if any fits, else new. */
static Block *block_get(Arena *a, size_t size)
{
    for (Block **pp = &a->spare; *pp; pp = &(*pp)->next) {
        Block *b = *pp;
        if (b->size >= size) {
            *pp = b->next;
            b->next = NULL;
            b->used = 0;
            return b;
        }
    }
    return block_new(size);
}

void arena_free(Arena *a)
{
    Block *b, *next;
    if (!a)
        return;
    for (b = a->head; b; b = next) {
        next = b->next;
        sl_free(b);
    }
    for (b = a->spare; b; b = next) {
        next = b->next;
        sl_free(b);
    }
    sl_free(a);
}

void *arena_alloc(Arena *a, size_t n)
{
    Block *b = a->head;
    size_t need = (n + 15) & ~(size_t)15;
    if (unlikely(b->used + need > b->size)) {
        size_t size = need > a->block_size / 4 ? need : a->block_size;
        Block *nb = block_get(a, size);
        if (size == need && b->used < b->size / 2) {
            /* keep filling the current block: slot the big one behind it */
            nb->next = b->next;
            b->next = nb;
            nb->used = need;
            a->used += need;
            return nb->data;
        }
        nb->next = b;
        a->head = b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used += need;
    return p;
}

void *arena_zalloc(Arena *a, size_t n)
{
    void *p = arena_alloc(a, n);
    memset(p, 0, n);
    return p;
}

char *arena_strndup(Arena *a, const char *s, size_t n)
{
    char *p = arena_alloc(a, n + 1);
    memcpy(p, s, n);
    p[n] = 0;
    return p;
}

void arena_reset(Arena *a)
{
    /* every block becomes a spare; the largest becomes the current one */
    Block *b = a->head, *best = NULL;
    while (b) {
        Block *next = b->next;
        b->next = a->spare;
        a->spare = b;
        b = next;
    }
    for (Block **pp = &a->spare, **bestp = NULL; ; pp = &(*pp)->next) {
        if (!*pp) {
            best = *bestp;
            *bestp = best->next;
            break;
        }
        if (!bestp || (*pp)->size > (*bestp)->size)
            bestp = pp;
    }
    best->next = NULL;
    best->used = 0;
    a->head = best;
    a->used = 0;
}

void arena_reset_keep(Arena *a, size_t keep)
{
    arena_reset(a);
    size_t held = arena_held(a);
    while (held > keep && a->spare) {
        Block **small = &a->spare;
        for (Block **pp = &a->spare; *pp; pp = &(*pp)->next)
            if ((*pp)->size < (*small)->size)
                small = pp;
        Block *b = *small;
        *small = b->next;
        held -= sizeof(*b) + b->size;
        sl_free(b);
    }
}

Arena *arena_borrow(Arena *parent, size_t want)
{
    Arena *a = sl_malloc(sizeof(*a));
    a->block_size = parent->block_size;
    a->spare = NULL;
    a->used = 0;
    size_t have = 0;
    while (parent->spare && have < want) {
        Block *b = parent->spare;
        parent->spare = b->next;
        b->next = a->spare;
        a->spare = b;
        have += b->size;
    }
    a->head = block_get(a, a->block_size);
    return a;
}

void arena_adopt(Arena *dst, Arena *src)
{
    /* src's blocks in use go behind dst's current one (which keeps
       filling), its spares join dst's */
    Block *last = src->head;
    while (last->next)
        last = last->next;
    last->next = dst->head->next;
    dst->head->next = src->head;
    while (src->spare) {
        Block *b = src->spare;
        src->spare = b->next;
        b->next = dst->spare;
        dst->spare = b;
    }
    dst->used += src->used;
    sl_free(src);
}

size_t arena_used(const Arena *a) { return a->used; }

size_t arena_held(const Arena *a)
{
    size_t n = 0;
    for (const Block *b = a->head; b; b = b->next)
        n += sizeof(*b) + b->size;
    for (const Block *b = a->spare; b; b = b->next)
        n += sizeof(*b) + b->size;
    return n;
}
