/*
 * expr/tz.h - time zones for TIMESTAMP WITH TIME ZONE: the system tz
 * database (TZif files under /usr/share/zoneinfo, Debian package tzdata)
 * read without setenv("TZ")/localtime, so worker threads may use it.
 *
 * A zone is named as in the tz database ('Europe/Paris', in any case as
 * PostgreSQL allows: the name kept is the file's) or 'UTC' (also 'GMT',
 * 'Z', 'Etc/UTC'). Each name is loaded once per process
 * and kept until exit in a table of at most TZ_MAX_ZONES zones; its index,
 * the zone id, is what a TIMESTAMPTZ SqlType carries (SqlType.len) as the
 * session zone. Id 0 is UTC. Ids are local to a process: anything written
 * down (fingerprints) uses tz_name.
 *
 * Offsets are seconds east of UTC. Past a zone's last transition the
 * POSIX TZ rule of the file's footer applies (TZif v2+), so far-future
 * instants (2090) follow the current rules.
 */
#ifndef SL_EXPR_TZ_H
#define SL_EXPR_TZ_H

#include "../base/err.h"

#define TZ_MAX_ZONES 4096
#define TZ_UTC 0
/* Microsecond values beyond +-2^62 (far outside years 1..9999) are taken
   as UTC, so no conversion overflows. */
#define TZ_US_LIMIT (INT64_C(1) << 62)

/* The id of zone name[0..n), loading it on first use; -1 with err set
   (SL_EDATA, `unknown time zone "Mars/Base"`) when there is no such zone. */
int tz_find(const char *name, size_t n, Err *err);
/* The name a zone was found by ('UTC' for 0). */
const char *tz_name(int id);
/* Offset from UTC in seconds at instant `utc` (seconds since 1970). */
int32_t tz_offset(int id, int64_t utc);
/* The instant (seconds) of local wall-clock time `local` (seconds since
   1970-01-01 00:00 local). In a gap (spring forward) the offset before the
   transition is used; in an overlap (fall back) the one after it, as
   PostgreSQL does. */
int64_t tz_local_to_utc(int id, int64_t local);

/* Microsecond forms of the two (TIMESTAMPTZ values are microseconds). */
int64_t tz_utc_to_local_us(int id, int64_t utc_us);
int64_t tz_local_to_utc_us(int id, int64_t local_us);

/* Parse a TZif file image (for tests: tz_find reads files). Returns a zone
   id or -1 with err set. */
int tz_load_image(const char *name, const uint8_t *data, size_t n, Err *err);
/* Parse a TZif image without keeping it (tests of damaged files): 0 with
   the offsets at instants at[0..nat) and the instants of local times
   at[0..nat) in off[] and utc[], or -1 with err set. */
int tz_check_image(const uint8_t *data, size_t n, const int64_t *at, int nat, int32_t *off,
                   int64_t *utc, Err *err);

#endif
