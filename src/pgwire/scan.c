/*
 * pgwire/scan.c - reading statements by hand where the SQL front end has
 * nothing to say (the words before a query: INSERT INTO t (cols), DELETE
 * FROM t, COPY t FROM STDIN, SET x TO y): spaces and comments, keywords,
 * names (bare or quoted, a schema dropped).
 */
#include <ctype.h>
#include <string.h>

#include "pg_int.h"

/* Past spaces and comments. */
const char *pg_skip_ws(const char *p)
{
    for (;;) {
        while (isspace((unsigned char)*p))
            p++;
        if (p[0] == '-' && p[1] == '-') {
            while (*p && *p != '\n')
                p++;
        } else if (p[0] == '/' && p[1] == '*') {
            const char *e = strstr(p + 2, "*/");
            p = e ? e + 2 : p + strlen(p);
        } else {
            return p;
        }
    }
}

/* The word at p (letters, digits, _) upper-cased into w; its length. */
size_t pg_word(const char *p, char *w, size_t wn)
{
    size_t n = 0;
    while (isalnum((unsigned char)p[n]) || p[n] == '_') {
        if (n + 1 < wn)
            w[n] = (char)toupper((unsigned char)p[n]);
        n++;
    }
    w[n < wn ? n : wn - 1] = 0;
    return n;
}

/* The keyword at *p (after spaces); advances past it when it is kw. */
bool pg_accept_kw(const char **p, const char *kw)
{
    const char *q = pg_skip_ws(*p);
    char w[32];
    size_t n = pg_word(q, w, sizeof(w));
    if (!n || strcmp(w, kw))
        return false;
    *p = q + n;
    return true;
}

/* A name (bare or "quoted", optionally schema-qualified: the schema is
   dropped) at *p into out; false when there is none. */
bool pg_name_at(const char **p, char *out, size_t on)
{
    const char *q = pg_skip_ws(*p);
    for (;;) {
        size_t k = 0;
        if (*q == '"') {
            q++;
            while (*q && !(*q == '"' && q[1] != '"')) {
                if (*q == '"')
                    q++;
                if (k + 1 < on)
                    out[k++] = *q;
                q++;
            }
            if (*q != '"')
                return false;
            q++;
        } else {
            while (isalnum((unsigned char)*q) || *q == '_' || (unsigned char)*q >= 0x80) {
                if (k + 1 < on)
                    out[k++] = *q;
                q++;
            }
            if (!k)
                return false;
        }
        out[k] = 0;
        if (*q != '.')
            break;
        q++; /* schema.name: keep the name */
    }
    *p = q;
    return true;
}

