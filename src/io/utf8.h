/*
 * io/utf8.h - is a byte string valid UTF-8 (RFC 3629: no overlong forms,
 * no surrogates, nothing above U+10FFFF)? The parsers (fmt_csv.c,
 * fmt_json.c) check every record with it, so every string the engine
 * holds is valid UTF-8 and every JSON answer it writes is valid JSON.
 * ASCII is skipped sixteen bytes at a time (SSE2 where there is one);
 * other bytes are decoded one sequence at a time.
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

/* Are the 16 bytes at s all ASCII? */
static inline bool utf8__ascii16(const unsigned char *s)
{
#ifdef __SSE2__
    return !_mm_movemask_epi8(_mm_loadu_si128((const __m128i *)(const void *)s));
#else
    uint64_t w[2];
    memcpy(w, s, 16);
    return !((w[0] | w[1]) & 0x8080808080808080ULL);
#endif
}

/* Length of the valid UTF-8 prefix of p[0..n): n when all of it is valid,
   else the offset of the first byte of the first bad sequence. Blocks of
   16 ASCII bytes are skipped at once; a block holding other bytes is
   decoded byte by byte (a sequence may run past the block's end). */
static inline size_t utf8_valid_prefix(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    size_t i = 0;
    while (i < n) {
        if (i + 16 <= n && utf8__ascii16(s + i)) {
            i += 16;
            continue;
        }
        size_t end = i + 16 < n ? i + 16 : n;
        while (i < end) {
            unsigned c = s[i];
            if (c < 0x80) {
                i++;
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
            if (n - i <= k || s[i + 1] < lo || s[i + 1] > hi)
                return i;
            for (size_t j = 2; j <= k; j++)
                if ((s[i + j] & 0xC0) != 0x80)
                    return i;
            i += k + 1;
        }
    }
    return n;
}

#endif
