/*
 * base/arena.c - bump allocator over a list of blocks. Large requests get a
 * block of their own. Reset frees every block but the first.
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
    a->used = 0;
    return a;
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
    sl_free(a);
}

void *arena_alloc(Arena *a, size_t n)
{
    Block *b = a->head;
    size_t need = (n + 15) & ~(size_t)15;
    if (unlikely(b->used + need > b->size)) {
        size_t size = need > a->block_size / 4 ? need : a->block_size;
        Block *nb = block_new(size);
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
    Block *b = a->head, *last = NULL;
    /* keep the oldest default-size block; free the rest */
    while (b) {
        Block *next = b->next;
        if (!next) {
            last = b;
            break;
        }
        sl_free(b);
        b = next;
    }
    if (last->size < a->block_size) {
        sl_free(last);
        last = block_new(a->block_size);
    }
    last->used = 0;
    last->next = NULL;
    a->head = last;
    a->used = 0;
}

size_t arena_used(const Arena *a) { return a->used; }
