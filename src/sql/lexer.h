/*
 * sql/lexer.h - SQL text to tokens with line and column. Keywords are not
 * distinguished here: identifiers carry their text and the parser matches
 * keywords case-insensitively, so any keyword not reserved in a position
 * stays usable as a name.
 */
#ifndef SL_SQL_LEXER_H
#define SL_SQL_LEXER_H

#include "../base/arena.h"
#include "../base/err.h"

typedef enum TokKind {
    T_EOF,
    T_IDENT,   /* bare identifier (text as written) */
    T_QIDENT,  /* "quoted identifier" (text unescaped, case kept) */
    T_INT,     /* 123 */
    T_NUM,     /* 1.5, .5, 1e3 */
    T_STR,     /* 'text' (unescaped) */
    T_OP,      /* punctuation/operator: text in s, e.g. "<=", "||", "(" */
} TokKind;

typedef struct Token {
    TokKind k;
    const char *s; /* NUL-terminated text (arena) */
    size_t n;
    int line, col;
} Token;

/* Tokenize text into *toks (arena-allocated, ends with T_EOF). Comments
   (-- and block) are skipped. Returns 0 or SL_EPARSE. */
int lex(const char *text, Arena *a, Token **toks, int *ntoks, Err *err);

#endif
