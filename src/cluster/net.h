/*
 * cluster/net.h - the transport between the hosts of a scale-out pipeline:
 * the ranks of an MPI job (Open MPI), one process per host.
 *
 * Everything a host sends travels through one primitive, net_exchange: an
 * all-to-all in which every host hands a byte buffer (possibly empty) for
 * every other host and receives one from each. The sizes travel first (8-byte
 * counts, point to point, so that a host that does not answer can be
 * named), then the bytes point to point, in pieces of at most 256 MiB so
 * that no MPI count overflows. Control messages
 * (a coordinator's command to every host, the hosts' replies) are
 * exchanges in which only one side sends.
 *
 * Collectives: every host must call net_exchange the same number of times
 * in the same order, from one thread at a time (MPI_THREAD_SERIALIZED). A
 * single-host process never initialises MPI (net_hosts() == 1 and
 * net_exchange is never called).
 */
#ifndef SL_CLUSTER_NET_H
#define SL_CLUSTER_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "../base/buf.h"
#include "../base/err.h"

/* Was this process started by an MPI launcher (mpirun, srun, ...)? */
bool net_launched(void);
/* Join the MPI job; gathers every host's name. Idempotent. */
int net_init(Err *err);
bool net_active(void);
int net_hosts(void);   /* 1 when MPI is not active */
int net_host(void);    /* this process's rank, 0 when not active */
/* The name (node name) of host h, as its process reported it. */
const char *net_host_name(int h);
/* send[h] goes to host h (send[net_host()] is ignored); recv[h] is reset and
   receives what host h sent (recv[net_host()] is left empty). Any failure
   ends the job (MPI's errors are fatal). */
void net_exchange(const Buf *send, Buf *recv);
/* The step watchdog: an exchange that waits longer than secs (0 =
   forever; default 60) ends the job with a message naming the host(s)
   it waits for and what this host was doing (net_set_activity). MPI
   detects a dead process, not a partitioned network. */
void net_set_deadline(double secs);
void net_set_activity(const char *what);
/* Leave the job cleanly (every host calls it). */
void net_finalize(void);

/*
 * Testing without MPI (fuzz/fuzz_hostmsg.c): act as host `host` of `hosts`
 * and hand every net_exchange to fn instead, which gets what this host
 * sends and fills recv (each already reset; recv[host] must stay empty).
 * net_active() is then true. fn NULL: back to the single-host state.
 */
typedef void (*NetFakeFn)(void *ctx, const Buf *send, Buf *recv);
void net_fake(int hosts, int host, NetFakeFn fn, void *ctx);

#endif
