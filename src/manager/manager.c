/*
 * manager/manager.c - `sluice serve --dir DIR --http [HOST:]PORT`: takes
 * DIR (created if missing) for itself with a lock (DIR/manager.lock: two
 * managers never share a directory), reloads every DIR/NAME.json, ends
 * children an earlier manager killed with -9 left behind (supervise.c),
 * starts the supervisor and the REST API (api.c), then waits for SIGINT or
 * SIGTERM: children are stopped (SIGTERM, SIGKILL after the grace period)
 * with their desired state kept, so the next serve starts them again.
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../base/mem.h"
#include "mgr_int.h"

int manager_serve(const MgrOpts *o, Err *err)
{
    Mgr *m = sl_calloc(1, sizeof(*m));
    m->o = *o;
    m->lock_fd = -1;
    int rc = SL_EIO;
    if (mkdir(o->dir, 0755) && errno != EEXIST) {
        err_set(err, SL_EIO, "--dir: cannot create %s: %s", o->dir, strerror(errno));
        goto out_free;
    }
    char path[4200];
    snprintf(path, sizeof(path), "%s/manager.lock", o->dir);
    m->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (m->lock_fd < 0 || flock(m->lock_fd, LOCK_EX | LOCK_NB)) {
        err_set(err, SL_EIO, "--dir %s: %s", o->dir,
                m->lock_fd < 0 ? strerror(errno) : "another manager serves this directory");
        goto out_free;
    }
    if (mpipes_load(m, err))
        goto out_free;
    for (int i = 0; i < m->np; i++)
        sup_reap_orphan(m, m->p[i]);
    /* SIGINT and SIGTERM are taken by sigwait below, in no other thread */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    pthread_mutex_init(&m->mu, NULL);
    pthread_cond_init(&m->cv, NULL);
    if (sup_start(m, err))
        goto out_curl;
    if (api_start(m, err)) {
        sup_stop(m);
        goto out_curl;
    }
    pthread_mutex_lock(&m->mu);
    int np = m->np;
    pthread_mutex_unlock(&m->mu);
    fprintf(stderr, "sluice: manager: listening on %s:%d (%d pipeline%s in %s)\n",
            o->srv.host, m->port, np, np == 1 ? "" : "s", o->dir);
    fflush(stderr);
    int sig = 0;
    sigwait(&sigs, &sig);
    fprintf(stderr, "sluice: manager: signal %d: stopping the pipelines\n", sig);
    sup_stop(m);
    api_stop(m);
    fprintf(stderr, "sluice: manager: stopped\n");
    rc = 0;
out_curl:
    if (rc && err && err->code)
        rc = err->code;
    curl_global_cleanup();
    pthread_mutex_destroy(&m->mu);
    pthread_cond_destroy(&m->cv);
out_free:
    if (rc && err && err->code)
        rc = err->code;
    for (int i = 0; i < m->np; i++)
        mpipe_free(m->p[i]);
    sl_free(m->p);
    if (m->lock_fd >= 0)
        close(m->lock_fd);
    sl_free(m);
    return rc;
}
