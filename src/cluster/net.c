/*
 * cluster/net.c - net.h on Open MPI: initialisation, host names, the
 * all-to-all byte exchange, abort. net_fake swaps MPI for a function so
 * that the host messages can be fuzzed in one process.
 */
#include "net.h"

#include <fcntl.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../base/base.h"
#include "../base/mem.h"

/* Largest piece of one message (keeps every MPI count inside an int). */
#define PIECE ((size_t)256 << 20)

static struct {
    bool on;
    int host, hosts;
    MPI_Comm comm;
    char (*names)[MPI_MAX_PROCESSOR_NAME];
    uint64_t *scount, *rcount;
    MPI_Request *req;
    int nreq;
    double deadline; /* seconds an exchange may wait, 0 = forever */
    char what[128];  /* what this host is doing (the watchdog's message) */
    NetFakeFn fake;  /* net_fake: exchanges go to fake(fake_ctx, ...) */
    void *fake_ctx;
} net = {.hosts = 1, .deadline = 60};

static double now_secs(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void net_set_deadline(double secs) { net.deadline = secs; }

void net_set_activity(const char *what) { snprintf(net.what, sizeof(net.what), "%s", what); }

/* The parent is the MPI launcher's process (mpirun, orted, prterun...)? */
static bool parent_is_launcher(void)
{
    char path[64], name[64] = {0};
    snprintf(path, sizeof(path), "/proc/%d/comm", (int)getppid());
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    if (!fgets(name, sizeof(name), f))
        name[0] = 0;
    fclose(f);
    return strstr(name, "mpirun") || strstr(name, "orterun") || strstr(name, "orted") ||
           strstr(name, "prte") || strstr(name, "mpiexec");
}

/* The step watchdog: an exchange made no progress within the deadline.
   MPI notices a dead process but not a partitioned network, so end the
   job from here: tell the launcher (which then ends every host) and exit. */
static void expired(const char *waiting)
{
    char msg[1024];
    snprintf(msg, sizeof(msg),
             "sluice: host %d (%s): no progress for %.0f s %s; waiting for %s. A host is "
             "unreachable, stopped or overloaded: ending the job (restart it to resume from the "
             "last checkpoint; --step-deadline SECS sets the deadline)\n",
             net.host, net.names ? net.names[net.host] : "?", net.deadline,
             net.what[0] ? net.what : "in an exchange", waiting);
    /* `sluice run --hosts` on this machine started the job: it ends it, and
       it prints our message itself when the job has ended (written to
       stderr, the line would race mpirun's forwarding of it against the
       SIGTERM below: under load mpirun died first and the line was lost) */
    const char *l = getenv("SLUICE_LAUNCHER");
    const char *notes = getenv("SLUICE_LAUNCHER_NOTES");
    char hn[256] = "";
    gethostname(hn, sizeof(hn) - 1);
    const char *at = l ? strchr(l, '@') : NULL;
    bool local = at && !strcmp(at + 1, hn);
    int fd = local && notes ? open(notes, O_WRONLY | O_APPEND | O_CLOEXEC) : -1;
    size_t len = strlen(msg);
    if (fd < 0 || write(fd, msg, len) != (ssize_t)len) {
        fputs(msg, stderr);
        fflush(stderr);
    }
    if (fd >= 0)
        close(fd);
    if (local)
        kill((pid_t)atoi(l), SIGUSR2);
    if (parent_is_launcher()) {
        /* the launcher ends the job, unless it waits for the lost host
           itself (mpirun does): then it is killed, and every other host's
           watchdog ends that host's processes */
        pid_t pp = getppid();
        kill(pp, SIGTERM);
        for (int i = 0; i < 50 && kill(pp, 0) == 0 && getppid() == pp; i++) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        if (getppid() == pp)
            kill(pp, SIGKILL);
    }
    _exit(3);
}

/* Wait for n requests, watching the deadline; who[i] names request i's
   peer (-1: every host). */
static void wait_all(int n, MPI_Request *req, const int *who)
{
    double t0 = 0;
    long naps = 0;
    for (long spins = 0;; spins++) {
        int done = 0;
        MPI_Testall(n, req, &done, MPI_STATUSES_IGNORE);
        if (done)
            return;
        if (spins < 64)
            continue; /* the answer is usually microseconds away */
        if (spins < 256) {
            sched_yield(); /* processes may outnumber cores */
            continue;
        }
        /* then naps growing to 0.5 ms: an idle host sleeps, a busy one
           answers within a nap */
        long us = 10L << (naps < 6 ? naps : 6);
        naps++;
        struct timespec ts = {0, (us > 500 ? 500 : us) * 1000};
        nanosleep(&ts, NULL);
        if (t0 == 0)
            t0 = now_secs();
        else if (net.deadline > 0 && now_secs() - t0 > net.deadline) {
            char list[256] = "";
            size_t len = 0;
            for (int i = 0; i < n; i++) {
                int flag = 0;
                if (req[i] != MPI_REQUEST_NULL)
                    MPI_Request_get_status(req[i], &flag, MPI_STATUS_IGNORE);
                if (req[i] == MPI_REQUEST_NULL || flag)
                    continue;
                if (who[i] < 0) {
                    snprintf(list, sizeof(list), "every host");
                    break;
                }
                if (len < sizeof(list) - 64 && !strstr(list, net.names[who[i]]))
                    len += (size_t)snprintf(list + len, sizeof(list) - len, "%shost %d (%s)",
                                            len ? ", " : "", who[i], net.names[who[i]]);
            }
            expired(list[0] ? list : "another host");
        }
    }
}

bool net_launched(void)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE",
                                       "PMI_RANK", NULL};
    for (int i = 0; vars[i]; i++)
        if (getenv(vars[i]))
            return true;
    return false;
}

int net_init(Err *err)
{
    if (net.on)
        return 0;
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) != MPI_SUCCESS)
        return err_set(err, SL_ERUNTIME, "MPI_Init_thread failed");
    if (provided < MPI_THREAD_SERIALIZED) {
        MPI_Finalize();
        return err_set(err, SL_ERUNTIME,
                       "the MPI library grants thread level %d; Sluice needs "
                       "MPI_THREAD_SERIALIZED",
                       provided);
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &net.comm);
    MPI_Comm_rank(net.comm, &net.host);
    MPI_Comm_size(net.comm, &net.hosts);
    net.on = true;
    net.names = sl_calloc((size_t)net.hosts, sizeof(*net.names));
    char me[MPI_MAX_PROCESSOR_NAME] = {0};
    int len = 0;
    MPI_Get_processor_name(me, &len);
    MPI_Allgather(me, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, net.names, MPI_MAX_PROCESSOR_NAME,
                  MPI_CHAR, net.comm);
    net.scount = sl_calloc((size_t)net.hosts, sizeof(uint64_t));
    net.rcount = sl_calloc((size_t)net.hosts, sizeof(uint64_t));
    return 0;
}

void net_fake(int hosts, int host, NetFakeFn fn, void *ctx)
{
    if (!ALWAYS(!net.on))
        return; /* never under MPI */
    net.fake = fn;
    net.fake_ctx = ctx;
    net.hosts = fn ? hosts : 1;
    net.host = fn ? host : 0;
}

bool net_active(void) { return net.on || net.fake; }
int net_hosts(void) { return net.hosts; }
int net_host(void) { return net.host; }

const char *net_host_name(int h)
{
    if (!net.names || h < 0 || h >= net.hosts)
        return "localhost";
    return net.names[h];
}


static int *req_peer;

static void post(bool send, void *p, uint64_t n, int peer)
{
    for (uint64_t off = 0; off < n; off += PIECE) {
        int cnt = (int)(n - off < PIECE ? n - off : PIECE);
        net.req = sl_realloc(net.req, sizeof(MPI_Request) * (size_t)(net.nreq + 1));
        req_peer = sl_realloc(req_peer, sizeof(int) * (size_t)(net.nreq + 1));
        req_peer[net.nreq] = peer;
        if (send)
            MPI_Isend((char *)p + off, cnt, MPI_BYTE, peer, 7, net.comm, &net.req[net.nreq]);
        else
            MPI_Irecv((char *)p + off, cnt, MPI_BYTE, peer, 7, net.comm, &net.req[net.nreq]);
        net.nreq++;
    }
}

void net_exchange(const Buf *send, Buf *recv)
{
    int H = net.hosts, me = net.host;
    if (net.fake) {
        for (int h = 0; h < H; h++)
            buf_reset(&recv[h]);
        net.fake(net.fake_ctx, send, recv);
        if (NEVER(recv[me].n))
            buf_reset(&recv[me]); /* nothing comes from oneself */
        return;
    }
    for (int h = 0; h < H; h++) {
        net.scount[h] = h == me ? 0 : send[h].n;
        buf_reset(&recv[h]);
    }
    /* the sizes, point to point (not MPI_Alltoall): a host that does not
       answer can then be named */
    net.nreq = 0;
    for (int h = 0; h < H; h++) {
        if (h == me)
            continue;
        net.req = sl_realloc(net.req, sizeof(MPI_Request) * (size_t)(net.nreq + 2));
        req_peer = sl_realloc(req_peer, sizeof(int) * (size_t)(net.nreq + 2));
        MPI_Irecv(&net.rcount[h], 1, MPI_UINT64_T, h, 6, net.comm, &net.req[net.nreq]);
        req_peer[net.nreq++] = h;
        MPI_Isend(&net.scount[h], 1, MPI_UINT64_T, h, 6, net.comm, &net.req[net.nreq]);
        req_peer[net.nreq++] = h;
    }
    if (net.nreq)
        wait_all(net.nreq, net.req, req_peer);
    net.nreq = 0;
    for (int h = 0; h < H; h++) {
        if (h == me || !net.rcount[h])
            continue;
        buf_reserve(&recv[h], net.rcount[h]);
        recv[h].n = net.rcount[h];
        post(false, recv[h].p, net.rcount[h], h);
    }
    for (int h = 0; h < H; h++) {
        if (h == me || !net.scount[h])
            continue;
        post(true, send[h].p, net.scount[h], h);
    }
    if (net.nreq)
        wait_all(net.nreq, net.req, req_peer);
}

void net_finalize(void)
{
    if (!net.on)
        return;
    MPI_Comm_free(&net.comm);
    MPI_Finalize();
    net.on = false;
    sl_free(net.names);
    sl_free(net.scount);
    sl_free(net.rcount);
    sl_free(net.req);
    sl_free(req_peer);
    net.names = NULL;
    net.req = NULL;
    req_peer = NULL;
}
