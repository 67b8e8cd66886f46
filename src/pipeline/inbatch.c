/*
 * pipeline/inbatch.c - one HTTP input batch (InBatch): rows parsed by a
 * format on an HTTP thread into chunks of the batch's own arena, that
 * grow with the batch, and the marks of partial updates ({"update": ...})
 * in row order. The queue (inbox.c), the ingress log (journal.c) and the
 * pending input (resolve.c) take batches whole.
 */
#include <string.h>

#include "../base/mem.h"
#include "inbatch.h"

InBatch *inbatch_new(const Circuit *c, int rel)
{
    InBatch *b = sl_calloc(1, sizeof(*b));
    b->rel = rel;
    b->ncol = c->rels[rel].ncol;
    b->types = c->rels[rel].types;
    b->a = arena_new(1 << 16);
    return b;
}

void inbatch_free(InBatch *b)
{
    if (!b)
        return;
    arena_free(b->a);
    sl_free(b);
}

Chunk *inbatch_room(InBatch *b)
{
    if (b->tail && b->tail->chunk->n < b->tail->chunk->cap)
        return b->tail->chunk;
    /* chunks grow with the batch: small requests stay small */
    int64_t cap = b->tail ? b->tail->chunk->cap * 2 : 64;
    if (cap > 16384)
        cap = 16384;
    Piece *pc = arena_zalloc(b->a, sizeof(*pc));
    pc->chunk = chunk_new(b->a, b->ncol, b->types, cap);
    if (b->tail)
        b->tail->next = pc;
    else
        b->head = pc;
    b->tail = pc;
    return pc->chunk;
}

Arena *inbatch_arena(InBatch *b) { return b->a; }
int inbatch_rel(const InBatch *b) { return b->rel; }

void inbatch_mark_update(InBatch *b, const uint8_t *present)
{
    UpdMark *m = arena_zalloc(b->a, sizeof(*m));
    m->c = b->tail->chunk;
    m->row = m->c->n - 1;
    m->present = arena_alloc(b->a, (size_t)b->ncol);
    memcpy(m->present, present, (size_t)b->ncol);
    if (b->upd_tail)
        b->upd_tail->next = m;
    else
        b->upd = m;
    b->upd_tail = m;
}

void inbatch_note(InBatch *b, int64_t bytes, int64_t bad)
{
    b->bytes += bytes;
    b->bad += bad;
}

int64_t inbatch_count(InBatch *b)
{
    int64_t n = 0;
    for (Piece *pc = b->head; pc; pc = pc->next)
        n += pc->chunk->n;
    return n;
}

int64_t inbatch_rows(const InBatch *b) { return inbatch_count((InBatch *)b); }
