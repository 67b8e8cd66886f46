/*
 * expr/tz.c - the tz database reader (tz.h): TZif files (RFC 8536) and the
 * POSIX TZ rule of their footer, cached per process.
 *
 * A TZif file is a v1 block (32-bit times) then, for version 2 and later, a
 * second header and block with 64-bit times, then "\n<POSIX TZ>\n". Only
 * the 64-bit block and the footer are used; leap-second records are
 * skipped (the zoneinfo "posix" zones have none). Before the first
 * transition local time type 0 applies; after the last one, the footer.
 *
 * Cache. zones[] only grows: an entry is fully built before the count that
 * publishes it is stored (release), so readers find a zone by id or name
 * without a lock (acquire). Loading and publishing take `lock`. Names that
 * are not zones are remembered too (up to a bound) so a column of bad names
 * does not reopen files row after row.
 */
#include "tz.h"

#include <dirent.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "../base/mem.h"
#include "text.h"

#define TZ_DIR "/usr/share/zoneinfo/"
#define TZ_MAX_FILE (1 << 20)
#define TZ_MAX_BAD 1024

/* One date rule of a POSIX TZ string: Jn (kind 'J'), n (kind 'n') or
   Mm.w.d (kind 'M'), at `secs` local time. */
typedef struct PosixDate {
    char kind;
    int m, w, d; /* month, week (5 = last), weekday (0 = Sunday); J/n: day in d */
    int32_t secs;
} PosixDate;

typedef struct PosixRule {
    bool ok;     /* a footer was read */
    bool dst;    /* has a daylight-saving part */
    int32_t std, dstoff; /* offsets east of UTC */
    PosixDate start, end;
} PosixRule;

typedef struct Zone {
    char *name;
    int64_t ntrans;
    int64_t *trans;   /* transition instants, ascending */
    uint8_t *idx;     /* local time type after each transition */
    int ntypes;
    int32_t *utoff;   /* offset of each type */
    PosixRule rule;
} Zone;

static Zone *zones[TZ_MAX_ZONES];
static _Atomic int nzones;
static char *bad[TZ_MAX_BAD];
static _Atomic int nbad;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static Zone utc_zone = {.name = "UTC", .rule = {.ok = true}};

/* ---------------------------------------------------------------- POSIX TZ rule */

static const char *posix_name(const char *s)
{
    if (*s == '<') {
        const char *e = strchr(s, '>');
        return e ? e + 1 : NULL;
    }
    const char *b = s;
    while ((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z'))
        s++;
    return s - b >= 3 ? s : NULL;
}

/* [+-]hh[:mm[:ss]] into seconds; NULL when malformed. */
static const char *posix_hms(const char *s, int32_t *out)
{
    int sign = 1, v[3] = {0, 0, 0};
    if (*s == '+' || *s == '-')
        sign = *s++ == '-' ? -1 : 1;
    for (int i = 0; i < 3; i++) {
        if (i && *s != ':')
            break;
        if (i)
            s++;
        if (*s < '0' || *s > '9')
            return NULL;
        while (*s >= '0' && *s <= '9' && v[i] < 1000)
            v[i] = v[i] * 10 + (*s++ - '0');
    }
    *out = sign * (v[0] * 3600 + v[1] * 60 + v[2]);
    return s;
}

static const char *posix_num(const char *s, int *out)
{
    if (*s < '0' || *s > '9')
        return NULL;
    int v = 0;
    while (*s >= '0' && *s <= '9' && v < 100000)
        v = v * 10 + (*s++ - '0');
    *out = v;
    return s;
}

static const char *posix_date(const char *s, PosixDate *d)
{
    d->secs = 7200;
    if (*s == 'M') {
        d->kind = 'M';
        if (!(s = posix_num(s + 1, &d->m)) || *s++ != '.' || !(s = posix_num(s, &d->w)) ||
            *s++ != '.' || !(s = posix_num(s, &d->d)))
            return NULL;
        if (d->m < 1 || d->m > 12 || d->w < 1 || d->w > 5 || d->d > 6)
            return NULL;
    } else {
        d->kind = *s == 'J' ? 'J' : 'n';
        if (*s == 'J')
            s++;
        if (!(s = posix_num(s, &d->d)) || d->d > 365)
            return NULL;
    }
    if (*s == '/')
        s = posix_hms(s + 1, &d->secs);
    return s;
}

/* "EST5EDT,M3.2.0,M11.1.0": note POSIX offsets are west of UTC. */
static bool posix_parse(const char *s, PosixRule *r)
{
    memset(r, 0, sizeof(*r));
    int32_t off;
    if (!(s = posix_name(s)) || !(s = posix_hms(s, &off)))
        return false;
    r->std = -off;
    if (!*s) {
        r->ok = true;
        return true;
    }
    if (!(s = posix_name(s)))
        return false;
    r->dst = true;
    r->dstoff = r->std + 3600;
    if (*s && *s != ',') {
        if (!(s = posix_hms(s, &off)))
            return false;
        r->dstoff = -off;
    }
    if (*s != ',') /* no rule: POSIX leaves it to the implementation; US rules */
        return false;
    if (!(s = posix_date(s + 1, &r->start)) || *s != ',' || !(s = posix_date(s + 1, &r->end)) || *s)
        return false;
    r->ok = true;
    return true;
}

static bool is_leap(int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

/* Local seconds (since 1970) at which rule date d falls in year y. */
static int64_t posix_when(const PosixDate *d, int y)
{
    int64_t day;
    if (d->kind == 'J') { /* 1..365, February 29 never counted */
        day = date_from_ymd(y, 1, 1) + d->d - 1;
        if (is_leap(y) && d->d >= 60)
            day++;
    } else if (d->kind == 'n') {
        day = date_from_ymd(y, 1, 1) + d->d;
    } else {
        int64_t first = date_from_ymd(y, d->m, 1);
        int64_t dow = (first + 4) % 7; /* 1970-01-01 was a Thursday */
        if (dow < 0)
            dow += 7;
        day = first + (d->d - dow + 7) % 7 + (int64_t)(d->w - 1) * 7;
        int nm = d->m == 12 ? 1 : d->m + 1, ny = d->m == 12 ? y + 1 : y;
        int64_t next = date_from_ymd(ny, nm, 1);
        while (day >= next)
            day -= 7;
    }
    return day * 86400 + d->secs;
}

static int32_t posix_offset(const PosixRule *r, int64_t utc)
{
    if (!r->dst)
        return r->std;
    int64_t days = (utc + r->std) / 86400 - ((utc + r->std) % 86400 < 0);
    int y, m, d;
    date_to_ymd(days, &y, &m, &d);
    int64_t start = posix_when(&r->start, y) - r->std; /* starts in standard time */
    int64_t end = posix_when(&r->end, y) - r->dstoff;  /* ends in daylight time */
    bool in = start < end ? (utc >= start && utc < end) : !(utc >= end && utc < start);
    return in ? r->dstoff : r->std;
}

/* ---------------------------------------------------------------- TZif */

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}
static int64_t be64(const uint8_t *p) { return (int64_t)((uint64_t)be32(p) << 32 | be32(p + 4)); }

typedef struct Hdr {
    uint32_t isut, isstd, leap, time, type, chr;
} Hdr;

static bool read_hdr(const uint8_t *p, size_t n, Hdr *h, char *ver)
{
    if (n < 44 || memcmp(p, "TZif", 4))
        return false;
    *ver = (char)p[4];
    h->isut = be32(p + 20);
    h->isstd = be32(p + 24);
    h->leap = be32(p + 28);
    h->time = be32(p + 32);
    h->type = be32(p + 36);
    h->chr = be32(p + 40);
    return h->type >= 1 && h->type <= 256 && h->time < 1000000 && h->leap < 100000 &&
           h->chr < 100000 && h->isut <= h->type && h->isstd <= h->type;
}

static size_t block_len(const Hdr *h, int tsz)
{
    return (size_t)h->time * (tsz + 1) + (size_t)h->type * 6 + h->chr +
           (size_t)h->leap * (tsz + 4) + h->isstd + h->isut;
}

static void zone_free(Zone *z)
{
    if (!z)
        return;
    sl_free(z->name);
    sl_free(z->trans);
    sl_free(z->idx);
    sl_free(z->utoff);
    sl_free(z);
}

static Zone *parse_tzif(const char *name, const uint8_t *p, size_t n, Err *err)
{
    Hdr h;
    char ver;
    if (!read_hdr(p, n, &h, &ver))
        goto out_bad;
    size_t off = 44 + block_len(&h, 4);
    int tsz = 4;
    if (ver >= '2') {
        if (off > n || !read_hdr(p + off, n - off, &h, &ver))
            goto out_bad;
        off += 44;
        tsz = 8;
    }
    const uint8_t *b = p + off;
    if (off + block_len(&h, tsz) > n)
        goto out_bad;
    Zone *z = sl_calloc(1, sizeof(*z));
    z->name = sl_strdup(name);
    z->ntrans = h.time;
    z->trans = sl_malloc(sizeof(int64_t) * (h.time + 1));
    z->idx = sl_malloc(h.time + 1);
    z->ntypes = (int)h.type;
    z->utoff = sl_malloc(sizeof(int32_t) * h.type);
    for (uint32_t i = 0; i < h.time; i++) {
        z->trans[i] = tsz == 8 ? be64(b + (size_t)i * 8) : (int32_t)be32(b + (size_t)i * 4);
        if (i && z->trans[i] <= z->trans[i - 1])
            goto out_free;
    }
    b += (size_t)h.time * tsz;
    for (uint32_t i = 0; i < h.time; i++) {
        z->idx[i] = b[i];
        if (b[i] >= h.type)
            goto out_free;
    }
    b += h.time;
    for (uint32_t i = 0; i < h.type; i++) {
        z->utoff[i] = (int32_t)be32(b + (size_t)i * 6);
        if (z->utoff[i] < -25 * 3600 || z->utoff[i] > 26 * 3600)
            goto out_free;
    }
    off += block_len(&h, tsz);
    /* footer: "\n" POSIX TZ "\n" (v2+) */
    if (tsz == 8 && off < n && p[off] == '\n') {
        const uint8_t *e = memchr(p + off + 1, '\n', n - off - 1);
        if (e && e - (p + off + 1) < 128) {
            char s[128];
            size_t len = (size_t)(e - (p + off + 1));
            memcpy(s, p + off + 1, len);
            s[len] = 0;
            if (len && !posix_parse(s, &z->rule))
                goto out_free;
        }
    }
    return z;
out_free:
    zone_free(z);
out_bad:
    err_set(err, SL_EDATA, "time zone file of \"%s\" is not a valid TZif file", name);
    return NULL;
}

/* ---------------------------------------------------------------- lookup */

static bool is_utc_name(const char *s, size_t n)
{
    static const char *u[] = {"UTC", "GMT", "Z", "Etc/UTC", "Etc/GMT", "UCT", "Zulu",
                              "Etc/UCT", "Etc/Zulu", "Universal", "Etc/Universal"};
    for (size_t i = 0; i < sizeof(u) / sizeof(u[0]); i++)
        if (strlen(u[i]) == n && !strncasecmp(u[i], s, n))
            return true;
    return false;
}

/* Names are paths under TZ_DIR: letters, digits, '_', '-', '+', '/', no
   "..", no leading '/'. */
static bool valid_name(const char *s, size_t n)
{
    if (!n || n > 128 || s[0] == '/' || s[0] == '.')
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '+' || c == '/' || (c == '.' && s[i - 1] != '.' &&
              s[i - 1] != '/')))
            return false;
    }
    return true;
}

static int find_published(const char *s, size_t n)
{
    int c = atomic_load_explicit(&nzones, memory_order_acquire);
    for (int i = 1; i < c; i++)
        if (strlen(zones[i]->name) == n && !strncasecmp(zones[i]->name, s, n))
            return i;
    return -1;
}

static bool known_bad(const char *s, size_t n)
{
    int c = atomic_load_explicit(&nbad, memory_order_acquire);
    for (int i = 0; i < c; i++)
        if (strlen(bad[i]) == n && !strncasecmp(bad[i], s, n))
            return true;
    return false;
}

/* The spelling under TZ_DIR of name, each part matched ignoring case
   ('europe/paris' -> 'Europe/Paris'), into out; false when there is none. */
static bool resolve_case(const char *name, char *out, size_t size)
{
    char dir[256];
    size_t dl = (size_t)snprintf(dir, sizeof(dir), "%s", TZ_DIR), ol = 0;
    for (const char *p = name; *p;) {
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        DIR *d = opendir(dir);
        if (!d)
            return false;
        struct dirent *de;
        bool found = false;
        while (!found && (de = readdir(d)))
            if (strlen(de->d_name) == len && !strncasecmp(de->d_name, p, len) &&
                dl + len + 2 < sizeof(dir) && ol + len + 2 < size) {
                memcpy(dir + dl, de->d_name, len);
                memcpy(out + ol, de->d_name, len);
                dl += len;
                ol += len;
                found = true;
            }
        closedir(d);
        if (!found)
            return false;
        dir[dl] = out[ol] = 0;
        if (!e)
            break;
        dir[dl++] = out[ol++] = '/';
        dir[dl] = out[ol] = 0;
        p = e + 1;
    }
    return ol > 0;
}

/* The zone in file TZ_DIR/name (a regular file), or NULL with err untouched
   when there is none, or NULL with err set when it is not TZif. */
static Zone *load_file(const char *name, Err *err)
{
    char path[256];
    snprintf(path, sizeof(path), TZ_DIR "%s", name);
    struct stat st;
    if (stat(path, &st) || !S_ISREG(st.st_mode))
        return NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    uint8_t *buf = sl_malloc(TZ_MAX_FILE);
    size_t n = fread(buf, 1, TZ_MAX_FILE, f);
    fclose(f);
    Zone *z = parse_tzif(name, buf, n, err);
    sl_free(buf);
    return z;
}

static int publish(Zone *z, Err *err)
{
    int c = atomic_load_explicit(&nzones, memory_order_relaxed);
    if (c >= TZ_MAX_ZONES) {
        zone_free(z);
        return err_set(err, SL_EDATA, "more than %d time zones in use", TZ_MAX_ZONES), -1;
    }
    zones[c] = z;
    atomic_store_explicit(&nzones, c + 1, memory_order_release);
    return c;
}

int tz_find(const char *s, size_t n, Err *err)
{
    if (is_utc_name(s, n))
        return TZ_UTC;
    int id = find_published(s, n);
    if (id >= 0)
        return id;
    if (!valid_name(s, n) || known_bad(s, n))
        goto out_unknown;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&nzones, memory_order_relaxed) == 0)
        atomic_store_explicit(&nzones, 1, memory_order_release); /* 0 is UTC */
    id = find_published(s, n);
    if (id < 0) {
        char name[129];
        memcpy(name, s, n);
        name[n] = 0;
        Err e;
        err_init(&e);
        Zone *z = load_file(name, &e);
        char canon[129]; /* not published: find_published ignores case */
        if (!z && !e.code && resolve_case(name, canon, sizeof(canon)))
            z = load_file(canon, &e);
        if (z)
            id = publish(z, err);
        else if (e.code) {
            pthread_mutex_unlock(&lock);
            err_set(err, e.code, "%s", e.msg);
            return -1;
        } else {
            int c = atomic_load_explicit(&nbad, memory_order_relaxed);
            if (c < TZ_MAX_BAD) {
                bad[c] = sl_strdup(name);
                atomic_store_explicit(&nbad, c + 1, memory_order_release);
            }
        }
    }
    pthread_mutex_unlock(&lock);
    if (id >= 0)
        return id;
out_unknown:
    err_set(err, SL_EDATA, "unknown time zone \"%.*s\"", (int)(n > 100 ? 100 : n), s);
    return -1;
}

int tz_load_image(const char *name, const uint8_t *data, size_t n, Err *err)
{
    Zone *z = parse_tzif(name, data, n, err);
    if (!z)
        return -1;
    pthread_mutex_lock(&lock);
    if (atomic_load_explicit(&nzones, memory_order_relaxed) == 0)
        atomic_store_explicit(&nzones, 1, memory_order_release);
    int id = publish(z, err);
    pthread_mutex_unlock(&lock);
    return id;
}

static int32_t zone_offset(const Zone *z, int64_t utc);
static int64_t zone_local_to_utc(const Zone *z, int64_t local);

int tz_check_image(const uint8_t *data, size_t n, const int64_t *at, int nat, int32_t *off,
                   int64_t *utc, Err *err)
{
    Zone *z = parse_tzif("check", data, n, err);
    if (!z)
        return -1;
    for (int i = 0; i < nat; i++) {
        off[i] = zone_offset(z, at[i]);
        utc[i] = zone_local_to_utc(z, at[i]);
    }
    zone_free(z);
    return 0;
}

static const Zone *zone_of(int id)
{
    if (id <= 0 || id >= atomic_load_explicit(&nzones, memory_order_acquire))
        return &utc_zone;
    return zones[id];
}

const char *tz_name(int id) { return zone_of(id)->name; }

int32_t tz_offset(int id, int64_t utc) { return zone_offset(zone_of(id), utc); }

static int32_t zone_offset(const Zone *z, int64_t utc)
{
    if (z == &utc_zone)
        return 0;
    if (z->ntrans == 0 || utc < z->trans[0])
        return z->ntrans == 0 && z->rule.ok ? posix_offset(&z->rule, utc) : z->utoff[0];
    if (utc >= z->trans[z->ntrans - 1] && z->rule.ok)
        return posix_offset(&z->rule, utc);
    int64_t lo = 0, hi = z->ntrans - 1; /* last transition <= utc */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo + 1) / 2;
        if (z->trans[mid] <= utc)
            lo = mid;
        else
            hi = mid - 1;
    }
    return z->utoff[z->idx[lo]];
}

int64_t tz_local_to_utc(int id, int64_t local)
{
    return id == TZ_UTC ? local : zone_local_to_utc(zone_of(id), local);
}

/* The offsets a day either side of local; a transition between them makes
   local a gap (neither fits) or an overlap (both fit). Zones do not change
   offset twice within two days. */
static int64_t zone_local_to_utc(const Zone *z, int64_t local)
{
    int32_t before = zone_offset(z, local - 86400), after = zone_offset(z, local + 86400);
    int64_t ub = local - before, ua = local - after;
    bool fb = zone_offset(z, ub) == before, fa = zone_offset(z, ua) == after;
    if (fa)
        return ua; /* the only fit, or the later one in an overlap */
    if (fb)
        return ub;
    return ub; /* gap: the offset before the transition */
}

static int64_t floor_div(int64_t a, int64_t b) { return a / b - (a % b != 0 && (a < 0) != (b < 0)); }

int64_t tz_utc_to_local_us(int id, int64_t utc_us)
{
    if (id == TZ_UTC || utc_us > TZ_US_LIMIT || utc_us < -TZ_US_LIMIT)
        return utc_us;
    return utc_us + (int64_t)tz_offset(id, floor_div(utc_us, 1000000)) * 1000000;
}

int64_t tz_local_to_utc_us(int id, int64_t local_us)
{
    if (id == TZ_UTC || local_us > TZ_US_LIMIT || local_us < -TZ_US_LIMIT)
        return local_us;
    int64_t s = floor_div(local_us, 1000000);
    return tz_local_to_utc(id, s) * 1000000 + (local_us - s * 1000000);
}
