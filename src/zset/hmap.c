/*
 * zset/hmap.c - open-addressing hash table from byte keys to fixed-size
 * payloads. In: encoded keys and their sl_hash from operators (aggregate
 * groups, distinct counts, view contents). Out: stable payload pointers.
 *
 * Slots hold (hash, entry pointer) and are probed linearly; each entry is
 * its own allocation {klen, payload (16-byte aligned), key bytes}, so growth
 * moves slots but never payloads. Deletion leaves a tombstone, which keeps
 * slot positions fixed for an iteration in progress; tombstones go away
 * when an insert rebuilds the table (grown, or shrunk after deletes). The
 * slot index takes the top bits of hash * 2^64/phi, so hashes whose low
 * bits are fixed (e.g. by routing to a worker) still spread.
 */
#include "hmap.h"

#include "../base/mem.h"
#include "../base/vec.h"

typedef struct HEntry {
    size_t klen;
    _Alignas(16) unsigned char payload[]; /* then the key bytes */
} HEntry;

typedef struct Slot {
    uint64_t hash;
    HEntry *e; /* NULL: empty; TOMB: deleted */
} Slot;

#define SLAB_MAX 512
#define SLAB_CLASSES (SLAB_MAX / 16)
#define SLAB_BYTES (64 * 1024)

struct HMap {
    Slot *slots;
    size_t cap; /* power of two */
    int shift;  /* 64 - log2(cap) */
    int64_t count;
    size_t tombs;
    size_t psize;       /* payload bytes */
    size_t entry_bytes; /* bytes in live entries */
    /* entries up to SLAB_MAX bytes come from 64 KiB slabs, with a free list
       per 16-byte size class: no malloc per entry, entries packed densely */
    void *freel[SLAB_CLASSES + 1];
    uint8_t *bump;
    size_t bump_left;
    void **slabs;
    size_t nslabs, capslabs;
    size_t floor; /* hmap_reserve's capacity: inserts do not shrink below it */
};

static char tomb_marker;
#define TOMB ((HEntry *)(void *)&tomb_marker)

#define HMAP_MIN_CAP 16

static inline size_t slot_of(const HMap *m, uint64_t hash)
{
    return (size_t)((hash * 0x9E3779B97F4A7C15ull) >> m->shift);
}

static inline size_t entry_size(const HMap *m, size_t kn) { return sizeof(HEntry) + m->psize + kn; }

static inline const uint8_t *entry_key(const HMap *m, const HEntry *e) { return e->payload + m->psize; }

static void alloc_slots(HMap *m, size_t cap)
{
    m->slots = sl_calloc(cap, sizeof(Slot));
    m->cap = cap;
    m->shift = 64 - __builtin_ctzll(cap);
    m->tombs = 0;
}

static void *ent_alloc(HMap *m, size_t sz)
{
    size_t cls = (sz + 15) / 16;
    if (cls > SLAB_CLASSES)
        return sl_malloc(sz);
    if (m->freel[cls]) {
        void *p = m->freel[cls];
        m->freel[cls] = *(void **)p;
        return p;
    }
    size_t need = cls * 16;
    if (m->bump_left < need) {
        m->bump = sl_malloc(SLAB_BYTES); /* malloc aligns to 16 */
        *VEC_PUSH(m->slabs, m->nslabs, m->capslabs) = m->bump;
        m->bump_left = SLAB_BYTES;
    }
    void *p = m->bump;
    m->bump += need;
    m->bump_left -= need;
    return p;
}

static void ent_free(HMap *m, void *p, size_t sz)
{
    size_t cls = (sz + 15) / 16;
    if (cls > SLAB_CLASSES) {
        sl_free(p);
        return;
    }
    *(void **)p = m->freel[cls];
    m->freel[cls] = p;
}

HMap *hmap_new(size_t payload_size)
{
    HMap *m = sl_malloc(sizeof(*m));
    memset(m, 0, sizeof(*m));
    m->psize = payload_size;
    alloc_slots(m, HMAP_MIN_CAP);
    return m;
}

void hmap_free(HMap *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].e && m->slots[i].e != TOMB &&
            entry_size(m, m->slots[i].e->klen) > SLAB_MAX)
            sl_free(m->slots[i].e);
    for (size_t i = 0; i < m->nslabs; i++)
        sl_free(m->slabs[i]);
    sl_free(m->slabs);
    sl_free(m->slots);
    sl_free(m);
}

int64_t hmap_count(const HMap *m) { return m->count; }

size_t hmap_bytes(const HMap *m) { return sizeof(*m) + m->cap * sizeof(Slot) + m->entry_bytes; }

/* Slot holding key k, or SIZE_MAX. */
static size_t lookup(const HMap *m, const uint8_t *k, size_t kn, uint64_t hash)
{
    size_t mask = m->cap - 1;
    for (size_t i = slot_of(m, hash);; i = (i + 1) & mask) {
        const Slot *s = &m->slots[i];
        if (!s->e)
            return SIZE_MAX;
        if (s->e != TOMB && s->hash == hash && s->e->klen == kn &&
            (kn == 0 || memcmp(entry_key(m, s->e), k, kn) == 0))
            return i;
    }
}

/* First free (empty or tombstone) slot on hash's probe path. */
static size_t free_slot(const HMap *m, uint64_t hash)
{
    size_t mask = m->cap - 1, i = slot_of(m, hash);
    while (m->slots[i].e && m->slots[i].e != TOMB)
        i = (i + 1) & mask;
    return i;
}

/* Rebuild the slots at the least capacity that keeps the load at most 0.5
   after one more insert (so a full table doubles, and one emptied by
   deletes shrinks); drops every tombstone. Called by inserts that would
   push the load with tombstones over 0.7 or that find the table below 1/8
   full, never during an iteration. */
static void rebuild_for(HMap *m, int64_t n)
{
    size_t cap = HMAP_MIN_CAP;
    while ((size_t)(n + 1) * 2 > cap)
        cap *= 2;
    Slot *old = m->slots;
    size_t oldcap = m->cap;
    alloc_slots(m, cap);
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].e && old[i].e != TOMB)
            m->slots[free_slot(m, old[i].hash)] = old[i];
    sl_free(old);
}

static void rebuild(HMap *m) { rebuild_for(m, m->count); }

void hmap_prefetch(const HMap *m, uint64_t hash)
{
    __builtin_prefetch(&m->slots[slot_of(m, hash)], 1);
}

void hmap_reserve(HMap *m, int64_t n)
{
    if ((size_t)(n + 1) * 2 > m->cap)
        rebuild_for(m, n);
    m->floor = m->cap;
}

void *hmap_upsert(HMap *m, const uint8_t *k, size_t kn, uint64_t hash, bool *created)
{
    size_t i = lookup(m, k, kn, hash);
    if (i != SIZE_MAX) {
        if (created)
            *created = false;
        return m->slots[i].e->payload;
    }
    size_t used = (size_t)m->count + 1;
    if ((used + m->tombs) * 10 > m->cap * 7 || (m->cap > HMAP_MIN_CAP && m->cap > m->floor && used * 8 < m->cap))
        rebuild(m);
    i = free_slot(m, hash);
    if (m->slots[i].e == TOMB)
        m->tombs--;
    size_t sz = entry_size(m, kn);
    HEntry *e = ent_alloc(m, sz);
    e->klen = kn;
    memset(e->payload, 0, m->psize);
    if (kn)
        memcpy(e->payload + m->psize, k, kn);
    m->slots[i] = (Slot){hash, e};
    m->count++;
    m->entry_bytes += sz;
    if (created)
        *created = true;
    return e->payload;
}

void *hmap_find(const HMap *m, const uint8_t *k, size_t kn, uint64_t hash)
{
    size_t i = lookup(m, k, kn, hash);
    return i == SIZE_MAX ? NULL : m->slots[i].e->payload;
}

void hmap_delete(HMap *m, const uint8_t *k, size_t kn, uint64_t hash)
{
    size_t i = lookup(m, k, kn, hash);
    if (i == SIZE_MAX)
        return;
    m->floor = 0; /* shrinking after deletes is allowed again */
    size_t sz = entry_size(m, m->slots[i].e->klen);
    m->entry_bytes -= sz;
    ent_free(m, m->slots[i].e, sz);
    m->slots[i].e = TOMB;
    m->count--;
    m->tombs++;
}

bool hmap_next(const HMap *m, size_t *it, const uint8_t **k, size_t *kn, void **payload)
{
    for (size_t i = *it; i < m->cap; i++) {
        HEntry *e = m->slots[i].e;
        if (e && e != TOMB) {
            *k = entry_key(m, e);
            *kn = e->klen;
            *payload = e->payload;
            *it = i + 1;
            return true;
        }
    }
    *it = m->cap;
    return false;
}
