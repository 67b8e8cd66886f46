/*
 * manager/supervise.c - the children: each pipeline that should run is a
 * `sluice run DIR/NAME/program.sql --http 127.0.0.1:0 --storage ...`
 * process in its own process group, its stdout and stderr appended to
 * DIR/NAME/log, its pid in DIR/NAME/pid. Each child gets a random API key
 * of its own (DIR/NAME/child.json, mode 0600, its --config): only the
 * manager, which proxies to it, can use its port. One supervisor thread ticks
 * every 50 ms (sooner when woken): it reaps children that exited, learns a
 * new child's port from its "sluice: http: listening on" log line, starts
 * the pipelines that should run and have none (after the backoff), and
 * escalates a stop to SIGKILL after the grace period.
 *
 * A child that dies unasked (crash, kill -9, out of memory) makes its
 * pipeline UNAVAILABLE; it is started again from its storage after 0.5 s,
 * the delay doubling up to 10 s for each further death and back to 0.5 s
 * once a child has served for a minute; restart_count counts these
 * restarts. Three children in a row that die before serving make the
 * pipeline FAILED with the last error its log shows; it stays so until
 * the next start.
 *
 * A manager killed with -9 leaves its children running. The next manager
 * finds each one through DIR/NAME/pid (checked against /proc/PID/cmdline,
 * so a reused pid is left alone), stops it with SIGTERM (SIGKILL after the
 * grace period) and starts the pipeline again from its storage: there is
 * never a second child on the same storage.
 *
 * The log is bounded: before a child starts, a log past 2 x LOG_KEEP bytes
 * is cut to its last LOG_KEEP (whole lines); while a child writes to it,
 * the supervisor frees all but the last LOG_KEEP bytes on disk once a
 * second (a hole punched at the start: offsets stay valid, the file is
 * sparse). GET /v0/pipelines/NAME/logs reads the last 256 KiB.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "mgr_int.h"

#define TICK 0.05
#define BACKOFF_FIRST 0.5
#define BACKOFF_CAP 10.0
#define HEALTHY_SECS 60.0
#define START_FAILS_MAX 3
#define LOG_KEEP (1L << 20)

static pthread_t sup_thread;

static void timed_wait(Mgr *m, double secs)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    long ns = dl.tv_nsec + (long)(secs * 1e9);
    dl.tv_sec += ns / 1000000000L;
    dl.tv_nsec = ns % 1000000000L;
    pthread_cond_timedwait(&m->cv, &m->mu, &dl);
}

/* The text of the current child's log lines (from log_off; at most the
   last 256 KiB), or NULL. */
static char *log_tail(const Mgr *m, const Pipe *p)
{
    char path[4200];
    mpipe_path(m, p, "log", path, sizeof(path));
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long end = ftell(f);
    long from = p->log_off;
    if (end - from > (256L << 10))
        from = end - (256L << 10);
    if (from < 0 || end < from) {
        fclose(f);
        return NULL;
    }
    char *b = sl_malloc((size_t)(end - from) + 1);
    fseek(f, from, SEEK_SET);
    size_t n = fread(b, 1, (size_t)(end - from), f);
    b[n] = 0;
    fclose(f);
    return b;
}

static int find_port(const Mgr *m, const Pipe *p)
{
    char *t = log_tail(m, p);
    const char *key = "sluice: http: listening on 127.0.0.1:";
    const char *s = t ? strstr(t, key) : NULL;
    int port = s ? atoi(s + strlen(key)) : 0;
    sl_free(t);
    return port;
}

/* Whether a log line says nothing about an error. */
static bool routine_line(const char *s)
{
    return !strncmp(s, "sluice: http: listening", 23) || !strncmp(s, "--- manager", 11) ||
           !strncmp(s, "==", 2) || !strncmp(s, "sluice: storage", 15);
}

/* The last "sluice: ..." line of the current child's log (or else its last
   "FILE:LINE:COL: kind: message" line), as the error. */
static void last_error_line(const Mgr *m, const Pipe *p, char *out, size_t n)
{
    out[0] = 0;
    char *t = log_tail(m, p);
    if (!t)
        return;
    const char *best = NULL, *other = NULL;
    for (const char *s = t; s && *s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL) {
        if (routine_line(s))
            continue;
        if (!strncmp(s, "sluice: ", 8))
            best = s;
        else if (memmem(s, strcspn(s, "\n"), ": ", 2))
            other = s;
    }
    if (!best)
        best = other;
    if (best)
        snprintf(out, n, "%.*s", (int)strcspn(best, "\n"), best);
    sl_free(t);
}

static void write_pid(const Mgr *m, const Pipe *p)
{
    char path[4200], text[32];
    mpipe_path(m, p, "pid", path, sizeof(path));
    snprintf(text, sizeof(text), "%d\n", (int)p->pid);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd >= 0) {
        if (write(fd, text, strlen(text)) < 0)
            fprintf(stderr, "sluice: manager: cannot write %s\n", path);
        close(fd);
    }
}

/* A new random key for p's next child, in DIR/NAME/child.json (0600)
   for its --config; 0 or SL_EIO with p's error set. */
static int child_key(Mgr *m, Pipe *p, char *cfg, size_t n)
{
    unsigned char r[32];
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        mpipe_set_error(p, "getrandom: %s", strerror(errno));
        return SL_EIO;
    }
    for (size_t i = 0; i < sizeof(r); i++)
        snprintf(p->key + 2 * i, 3, "%02x", r[i]);
    mpipe_path(m, p, "child.json", cfg, n);
    unlink(cfg);
    int fd = open(cfg, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0 || dprintf(fd, "{\"api_keys\": [\"%s\"]}\n", p->key) < 0) {
        mpipe_set_error(p, "cannot write %s: %s", cfg, strerror(errno));
        if (fd >= 0)
            close(fd);
        return SL_EIO;
    }
    close(fd);
    return 0;
}

/* No child writes to the log: past 2 x LOG_KEEP bytes it is cut to its
   last LOG_KEEP bytes (from a line start), rewritten and renamed over. */
static void compact_log(const char *path)
{
    struct stat st;
    if (stat(path, &st) || st.st_size <= 2 * LOG_KEEP)
        return;
    FILE *f = fopen(path, "rb");
    if (!f)
        return;
    char *b = sl_malloc(LOG_KEEP);
    size_t n = 0;
    if (!fseek(f, (long)(st.st_size - LOG_KEEP), SEEK_SET))
        n = fread(b, 1, LOG_KEEP, f);
    fclose(f);
    const char *nl = memchr(b, '\n', n);
    size_t from = nl ? (size_t)(nl - b) + 1 : 0;
    char tmp[4300];
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *o = fopen(tmp, "wb");
    bool ok = o && fprintf(o, "--- manager: the log was cut to its last %zu bytes\n",
                           n - from) > 0 &&
              fwrite(b + from, 1, n - from, o) == n - from;
    if (o && fclose(o))
        ok = false;
    if (ok && rename(tmp, path) == 0)
        fprintf(stderr, "sluice: manager: %s: cut to its last %zu bytes\n", path, n - from);
    else
        unlink(tmp);
    sl_free(b);
}

/* A child writes to the log: all but its last LOG_KEEP bytes are freed on
   disk (a hole at the start; the size and every offset stay). */
static void bound_log(const Mgr *m, const Pipe *p)
{
    char path[4200];
    mpipe_path(m, p, "log", path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return;
    if (!fstat(fd, &st) && (long long)st.st_blocks * 512 > 2LL * LOG_KEEP &&
        st.st_size > LOG_KEEP) {
        off_t end = (st.st_size - LOG_KEEP) & ~(off_t)4095;
        if (fallocate(fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, 0, end) &&
            errno != EOPNOTSUPP)
            fprintf(stderr, "sluice: manager: cannot free the start of %s: %s\n", path,
                    strerror(errno));
    }
    close(fd);
}

static void spawn(Mgr *m, Pipe *p)
{
    char prog[4200], logp[4200], stor[4200], cfg[4200], workers[16], hosts[16], ckpt[32],
        ckto[32];
    if (child_key(m, p, cfg, sizeof(cfg))) {
        p->failed = true;
        return;
    }
    mpipe_path(m, p, "program.sql", prog, sizeof(prog));
    mpipe_path(m, p, "log", logp, sizeof(logp));
    if (p->storage_path)
        snprintf(stor, sizeof(stor), "%s", p->storage_path);
    else
        mpipe_path(m, p, "storage", stor, sizeof(stor));
    snprintf(workers, sizeof(workers), "%d", p->workers);
    snprintf(hosts, sizeof(hosts), "%d", p->hosts);
    snprintf(ckpt, sizeof(ckpt), "%g", p->ckpt_secs);
    snprintf(ckto, sizeof(ckto), "%g", p->ckpt_timeout);
    const char *argv[24];
    int k = 0;
    argv[k++] = m->o.exe;
    argv[k++] = "run";
    argv[k++] = prog;
    argv[k++] = "--http";
    argv[k++] = "127.0.0.1:0";
    argv[k++] = "--no-progress";
    argv[k++] = "--config";
    argv[k++] = cfg;
    argv[k++] = "--workers";
    argv[k++] = workers;
    if (p->hosts > 1) {
        argv[k++] = "--hosts";
        argv[k++] = hosts;
    }
    if (p->storage) {
        argv[k++] = "--storage";
        argv[k++] = stor;
        argv[k++] = "--fault-tolerance";
        argv[k++] = p->ft;
        argv[k++] = "--checkpoint-interval";
        argv[k++] = ckpt;
        argv[k++] = "--checkpoint-timeout";
        argv[k++] = ckto;
    }
    if (p->want == WANT_PAUSED)
        argv[k++] = "--paused";
    argv[k] = NULL;
    compact_log(logp);
    int fd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    struct stat st;
    if (fd < 0 || fstat(fd, &st)) {
        mpipe_set_error(p, "cannot open %s: %s", logp, strerror(errno));
        if (fd >= 0)
            close(fd);
        p->failed = true;
        return;
    }
    p->log_off = (long)st.st_size;
    char stamp[64];
    time_t now = time(NULL);
    strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
    dprintf(fd, "--- manager: started at %s (restart %d)\n", stamp, p->restarts);
    p->log_off = (long)lseek(fd, 0, SEEK_END);
    pid_t pid = fork();
    if (pid == 0) {
        setpgid(0, 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        int nul = open("/dev/null", O_RDONLY);
        if (nul >= 0)
            dup2(nul, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        execv(m->o.exe, (char *const *)argv);
        dprintf(2, "sluice: manager: cannot run %s: %s\n", m->o.exe, strerror(errno));
        _exit(127);
    }
    close(fd);
    if (pid < 0) {
        mpipe_set_error(p, "cannot start a process: %s", strerror(errno));
        p->next_start = mgr_now() + BACKOFF_CAP;
        return;
    }
    setpgid(pid, pid);
    p->pid = pid;
    p->port = 0;
    p->spawned_at = mgr_now();
    p->term_sent = false;
    p->paused_child = p->want == WANT_PAUSED;
    write_pid(m, p);
    fprintf(stderr, "sluice: manager: %s: started pid %d\n", p->name, (int)pid);
}

/* Whether a process of group pg still runs (zombies do not count: they
   hold no storage lock). */
static bool group_alive(pid_t pg)
{
    DIR *d = opendir("/proc");
    if (!d)
        return false;
    bool alive = false;
    struct dirent *de;
    while (!alive && (de = readdir(d))) {
        if (de->d_name[0] < '1' || de->d_name[0] > '9')
            continue;
        char path[300], buf[1024];
        snprintf(path, sizeof(path), "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t n = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[n] = 0;
        const char *rp = strrchr(buf, ')');
        char st;
        int ppid, pgrp;
        if (rp && sscanf(rp + 1, " %c %d %d", &st, &ppid, &pgrp) == 3 && pgrp == pg &&
            st != 'Z' && st != 'X')
            alive = true;
    }
    closedir(d);
    return alive;
}

/* The child exited with status st. */
static void on_exit_child(Mgr *m, Pipe *p, int st)
{
    char path[4200];
    mpipe_path(m, p, "pid", path, sizeof(path));
    unlink(path);
    bool was_up = p->port != 0, asked = p->term_sent;
    kill(-p->pid, SIGKILL); /* what it forked goes with it */
    p->old_group = p->pid;
    double served = was_up ? mgr_now() - p->up_at : 0;
    p->pid = 0;
    p->port = 0;
    p->term_sent = false;
    p->paused_child = false;
    if (asked || p->want == WANT_STOPPED || m->quit)
        return;
    char line[1024] = "";
    if (!WIFSIGNALED(st)) /* killed: its last lines are not about that */
        last_error_line(m, p, line, sizeof(line));
    char how[64];
    if (WIFSIGNALED(st))
        snprintf(how, sizeof(how), "was killed by signal %d", WTERMSIG(st));
    else
        snprintf(how, sizeof(how), "exited with status %d", WEXITSTATUS(st));
    mpipe_set_error(p, "the pipeline process %s%s%s%s", how, was_up ? "" : " before serving",
                   *line ? ": " : "", line);
    fprintf(stderr, "sluice: manager: %s: %s\n", p->name, p->error);
    if (!was_up && ++p->start_fails >= START_FAILS_MAX) {
        p->failed = true;
    } else {
        if (was_up)
            p->start_fails = 0;
        if (served >= HEALTHY_SECS || p->backoff <= 0)
            p->backoff = BACKOFF_FIRST;
        p->next_start = mgr_now() + p->backoff;
        p->backoff = p->backoff * 2 > BACKOFF_CAP ? BACKOFF_CAP : p->backoff * 2;
        p->restarts++;
    }
    Err e = {0};
    if (mpipe_save(m, p, &e))
        fprintf(stderr, "sluice: manager: %s\n", e.msg);
}

static void tick(Mgr *m)
{
    double now = mgr_now();
    for (int i = 0; i < m->np; i++) {
        Pipe *p = m->p[i];
        if (p->pid) {
            int st;
            pid_t r = waitpid(p->pid, &st, WNOHANG);
            if (r == p->pid || (r < 0 && errno == ECHILD)) {
                on_exit_child(m, p, r == p->pid ? st : 0);
                mpipe_note_state(p);
                pthread_cond_broadcast(&m->cv);
                continue;
            }
        }
        if (p->pid && !p->port && !p->term_sent && (p->port = find_port(m, p))) {
            p->up_at = now;
            fprintf(stderr, "sluice: manager: %s: serving on port %d\n", p->name, p->port);
            pthread_cond_broadcast(&m->cv);
        }
        if (p->pid && now - p->log_checked >= 1.0) {
            p->log_checked = now;
            bound_log(m, p);
        }
        if (p->pid && p->port && now - p->up_at >= HEALTHY_SECS) {
            p->backoff = BACKOFF_FIRST;
            p->start_fails = 0;
        }
        if (p->pid && !p->term_sent && (p->want == WANT_STOPPED || m->quit)) {
            kill(-p->pid, SIGTERM);
            p->term_sent = true;
            p->term_at = now;
        }
        if (p->pid && p->term_sent && now - p->term_at > m->o.grace)
            kill(-p->pid, SIGKILL);
        mpipe_note_state(p);
        if (!p->pid && p->old_group && !group_alive(p->old_group))
            p->old_group = 0;
        if (!p->pid && !p->old_group && !m->quit && p->want != WANT_STOPPED && !p->failed &&
            now >= p->next_start)
            spawn(m, p);
        mpipe_note_state(p);
    }
}

/* A serving child paused while its pipeline should run, or the other way
   (pause or start asked while it was starting): its own /pause or /start,
   sent without mu held. */
static void sync_pause(Mgr *m)
{
    for (int i = 0; i < m->np; i++) {
        Pipe *p = m->p[i];
        bool want_paused = p->want == WANT_PAUSED;
        if (!p->pid || !p->port || p->term_sent || p->want == WANT_STOPPED ||
            p->paused_child == want_paused)
            continue;
        char name[sizeof(p->name)], key[sizeof(p->key)];
        memcpy(name, p->name, sizeof(name));
        memcpy(key, p->key, sizeof(key));
        int port = p->port;
        pthread_mutex_unlock(&m->mu);
        int st = sup_child_post(port, key, want_paused ? "/pause" : "/start");
        pthread_mutex_lock(&m->mu);
        p = mpipe_find(m, name);
        if (p && p->port == port && st >= 200 && st < 300)
            p->paused_child = want_paused;
        return; /* the table may have changed: the next tick goes on */
    }
}

static void *sup_main(void *arg)
{
    Mgr *m = arg;
    pthread_mutex_lock(&m->mu);
    for (;;) {
        tick(m);
        if (!m->quit)
            sync_pause(m);
        bool busy = false;
        for (int i = 0; i < m->np; i++)
            busy |= m->p[i]->pid != 0;
        if (m->quit && !busy)
            break;
        timed_wait(m, TICK);
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int sup_start(Mgr *m, Err *err)
{
    if (pthread_create(&sup_thread, NULL, sup_main, m))
        return err_set(err, SL_EIO, "cannot start the supervisor thread");
    return 0;
}

void sup_stop(Mgr *m)
{
    pthread_mutex_lock(&m->mu);
    m->quit = true;
    pthread_cond_broadcast(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(sup_thread, NULL);
}

void sup_stop_child(Mgr *m, const char *name)
{
    pthread_cond_broadcast(&m->cv);
    Pipe *p;
    /* found again after each wait: another request may have replaced or
       deleted it meanwhile */
    while ((p = mpipe_find(m, name)) && p->pid)
        pthread_cond_wait(&m->cv, &m->mu);
}

/* Whether pid runs program (its command line names it) and is not a zombie. */
static bool runs(pid_t pid, const char *program)
{
    char path[64], buf[8192];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *rp = strrchr(buf, ')');
    if (!rp || rp[1] != ' ' || rp[2] == 'Z' || rp[2] == 'X')
        return false;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    f = fopen(path, "r");
    if (!f)
        return false;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    for (size_t i = 0; i < n; i += strlen(buf + i) + 1)
        if (!strcmp(buf + i, program))
            return true;
    return false;
}

void sup_reap_orphan(Mgr *m, Pipe *p)
{
    char path[4200], prog[4200];
    mpipe_path(m, p, "pid", path, sizeof(path));
    mpipe_path(m, p, "program.sql", prog, sizeof(prog));
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    int pid = 0;
    if (fscanf(f, "%d", &pid) != 1)
        pid = 0;
    fclose(f);
    if (pid > 1 && runs(pid, prog)) {
        fprintf(stderr, "sluice: manager: %s: stopping pid %d left by an earlier manager\n",
                p->name, pid);
        kill(-pid, SIGTERM);
        double t0 = mgr_now();
        bool killed = false;
        while (runs(pid, prog)) {
            if (!killed && mgr_now() - t0 > m->o.grace) {
                kill(-pid, SIGKILL);
                killed = true;
            }
            struct timespec ts = {0, 20 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    unlink(path);
}
