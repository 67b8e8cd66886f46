/*
 * base/vec.c - the growth rule behind vec.h's macros.
 */
#include "vec.h"

size_t vec_next_cap(size_t cap, size_t need, size_t first, size_t limit)
{
    if (need > limit)
        sl_panic("array of %zu elements exceeds its capacity type (at most %zu)", need, limit);
    size_t c = cap ? cap : (first ? first : 1);
    while (c < need)
        c = c > SIZE_MAX / 2 ? SIZE_MAX : c * 2;
    return c > limit ? limit : c;
}
