/*
 * io/utf8.h - is a byte string valid UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF)? The parsers (fmt_csv.c,
 * fmt_json.c) check every record with it, so every string the engine
 * holds is valid UTF-8 and every JSON answer it writes is valid JSON.
 * ASCII is skipped sixteen (SSE2) or eight bytes at a time; other bytes
 * are decoded one sequence at a time.
 */
#ifndef SL_IO_UTF8_H
#define SL_IO_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* Length of the valid UTF-8 prefix of p[0..n): n when all of it is valid,
   else the offset of the first byte of the first bad sequence. */
static inline size_t utf8_valid_prefix(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
#ifdef __SSE2__
        while (i + 16 <= n &&
               !_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)(s + i))))
            i += 16;
#endif
        while (i + 8 <= n) {
            uint64_t w;
            memcpy(&w, s + i, 8);
            if (w & 0x8080808080808080ULL)
                break;
            i += 8;
        }
        while (i < n && s[i] < 0x80)
            i++;
        if (i == n)
            break;
        unsigned c = s[i];
        if (c >= 0xC2 && c <= 0xDF && i + 1 < n && (s[i + 1] & 0xC0) == 0x80) {
            i += 2; /* the common two-byte case */
            continue;
        }
        size_t k;
        unsigned lo = 0x80, hi = 0xBF;
        if (c >= 0xC2 && c <= 0xDF) {
            k = 1;
        } else if (c >= 0xE0 && c <= 0xEF) {
            k = 2;
            if (c == 0xE0)
                lo = 0xA0; /* overlong */
            else if (c == 0xED)
                hi = 0x9F; /* surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            k = 3;
            if (c == 0xF0)
                lo = 0x90; /* overlong */
            else if (c == 0xF4)
                hi = 0x8F; /* above U+10FFFF */
        } else {
            return i;
        }
        if (n - i <= k)
            return i;
        if (s[i + 1] < lo || s[i + 1] > hi)
            return i;
        for (size_t j = 2; j <= k; j++)
            if ((s[i + j] & 0xC0) != 0x80)
                return i;
        i += k + 1;
    }
    return n;
}

#endif
