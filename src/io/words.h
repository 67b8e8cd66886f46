/*
 * io/words.h - small embedded word lists for datagen's string strategies
 * (word, words, sentence, name, email). Static data: Str values pointing
 * into them stay valid for the life of the process.
 */
#ifndef SL_IO_WORDS_H
#define SL_IO_WORDS_H

#include "../expr/chunk.h"

typedef struct WordList {
    const Str *w;
    uint32_t n;
} WordList;

extern const WordList words_lorem;  /* lowercase lorem-ipsum words */
extern const WordList words_first;  /* given names, capitalized */
extern const WordList words_last;   /* family names, capitalized */
extern const WordList words_domain; /* reserved example domains for e-mail */

#endif
