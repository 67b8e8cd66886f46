/*
 * base/vec.h - the one way to grow an array: VEC_RESERVE and VEC_PUSH on
 * a pointer, a count and a capacity that live wherever the caller keeps
 * them (git's ALLOC_GROW). The capacity doubles from a first size, so n
 * pushes cost O(n) copies; the element type comes from the pointer.
 *
 *     Thing *v = NULL; int n = 0, cap = 0;
 *     *VEC_PUSH(v, n, cap) = thing;         (heap, sl_realloc: free with sl_free)
 *     VEC_RESERVE(v, cap, n + extra);       (room for n + extra elements)
 *     *VEC_PUSH_ARENA(a, v, n, cap) = x;    (arena: the old array stays in a)
 *
 * count and cap may be any integer type (int, int64_t, size_t); growth
 * past the capacity type's range panics, never wraps silently. Out of
 * memory exits as every sl_malloc does (mem.h).
 */
#ifndef SL_BASE_VEC_H
#define SL_BASE_VEC_H

#include "arena.h"
#include "base.h"
#include "mem.h"

/* The capacity after growing cap to hold at least need elements: cap
   doubled (first when 0) until it does. Panics past `limit` (the largest
   value the caller's capacity type holds). */
size_t vec_next_cap(size_t cap, size_t need, size_t first, size_t limit);

/* The largest value of integer lvalue x's type (x signed or unsigned). */
#define VEC_TYPE_MAX_(x)                                                                       \
    ((typeof(x))~(typeof(x))0 > (typeof(x))0                                                   \
         ? (size_t)(typeof(x))~(typeof(x))0                                                    \
         : (size_t)((((typeof(x))1 << (sizeof(x) * 8 - 2)) - 1) * 2 + 1))

/* The first capacity of an array of elements of size es: 16 elements, or
   enough for 256 bytes when they are small. */
#define VEC_FIRST_(es) ((es) >= 16 ? (size_t)16 : (size_t)256 / (es))

/* Make room for need elements in arr (heap). */
#define VEC_RESERVE(arr, cap, need)                                                            \
    do {                                                                                       \
        size_t vec_need_ = (size_t)(need);                                                     \
        if (vec_need_ > (size_t)(cap)) {                                                       \
            size_t vec_c_ = vec_next_cap((size_t)(cap), vec_need_, VEC_FIRST_(sizeof(*(arr))), \
                                         VEC_TYPE_MAX_(cap));                                  \
            (arr) = sl_realloc((arr), vec_c_ * sizeof(*(arr)));                                \
            (cap) = (typeof(cap))vec_c_;                                                       \
        }                                                                                      \
    } while (0)

/* A pointer to a new last element of arr (uninitialized); n grows by one. */
#define VEC_PUSH(arr, n, cap)                                                                  \
    ({                                                                                         \
        VEC_RESERVE(arr, cap, (size_t)(n) + 1);                                                \
        &(arr)[(n)++];                                                                         \
    })

/* The same for an array that lives in arena a: a bigger array is taken
   from a and the first n elements copied (the old one stays in a). */
#define VEC_RESERVE_ARENA(a, arr, n, cap, need)                                                \
    do {                                                                                       \
        size_t vec_need_ = (size_t)(need);                                                     \
        if (vec_need_ > (size_t)(cap)) {                                                       \
            size_t vec_c_ = vec_next_cap((size_t)(cap), vec_need_, VEC_FIRST_(sizeof(*(arr))), \
                                         VEC_TYPE_MAX_(cap));                                  \
            typeof(arr) vec_v_ = arena_alloc((a), vec_c_ * sizeof(*(arr)));                    \
            if ((n) > 0)                                                                       \
                memcpy(vec_v_, (arr), (size_t)(n) * sizeof(*(arr)));                           \
            (arr) = vec_v_;                                                                    \
            (cap) = (typeof(cap))vec_c_;                                                       \
        }                                                                                      \
    } while (0)

#define VEC_PUSH_ARENA(a, arr, n, cap)                                                         \
    ({                                                                                         \
        VEC_RESERVE_ARENA(a, arr, n, cap, (size_t)(n) + 1);                                    \
        &(arr)[(n)++];                                                                         \
    })

#endif
