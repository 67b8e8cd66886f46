/*
 * pgwire/listen.c - the listening socket and the sessions: one thread
 * accepts connections (at most PgOpts.max_connections at once; more get a
 * FATAL 53300 and are closed), one thread per session reads its messages.
 *
 * A session: the startup packet (SSLRequest answered 'S' and a TLS
 * handshake when a certificate was given, else 'N'; GSSENCRequest 'N';
 * CancelRequest closed: queries are bounded by the /query limits instead), then authentication (trust without API keys;
 * with keys, a cleartext password that must be one of them), the
 * ParameterStatus drivers read, ReadyForQuery, and the message loop:
 * Query (exec.c), the extended protocol (ext.c), Terminate.
 *
 * Hostile clients: a message body is at most PG_MAX_MSG bytes (a longer
 * length gets a FATAL 08P01 and the session ends before anything is
 * read), startup must end within PG_STARTUP_SECS and a started message
 * must be complete within PG_MSG_SECS (slowloris), a client that does not
 * read its answers is dropped after the send timeout. Sessions never hold
 * the pipeline: they meet the controller only through pipeline.h's
 * thread-safe calls.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "../base/mem.h"
#include "../base/vec.h"
#include "pg_int.h"

static void fatal(PgConn *c, const char *code, const char *msg)
{
    PgErr e;
    pg_err(&e, code, "%s", msg);
    e.fatal = true;
    pg_send_error(c, &e);
    pg_flush(c);
}

/* Compare without an early exit, so that timing does not leak a key. */
static bool key_equal(const char *a, const char *b)
{
    size_t an = strlen(a), bn = strlen(b);
    unsigned char d = an != bn;
    for (size_t i = 0; i < an; i++)
        d |= (unsigned char)(a[i] ^ b[i % (bn ? bn : 1)]);
    return d == 0;
}

/* The server side of a TLS handshake on c's socket (after 'S'), bounded
   by PG_STARTUP_SECS; false when it failed. */
static bool tls_handshake(PgConn *c)
{
    gnutls_session_t t;
    if (gnutls_init(&t, GNUTLS_SERVER) < 0)
        return false;
    int rc = gnutls_set_default_priority(t);
    if (rc >= 0)
        rc = gnutls_credentials_set(t, GNUTLS_CRD_CERTIFICATE, c->s->cred);
    if (rc >= 0) {
        gnutls_certificate_server_set_request(t, GNUTLS_CERT_IGNORE);
        gnutls_transport_set_int(t, c->fd);
        gnutls_handshake_set_timeout(t, PG_STARTUP_SECS * 1000);
        do
            rc = gnutls_handshake(t);
        while (rc < 0 && !gnutls_error_is_fatal(rc));
    }
    if (rc < 0) {
        gnutls_deinit(t);
        return false;
    }
    c->tls = t;
    return true;
}

/* The startup packet and authentication; false ends the session. */
static bool startup(PgConn *c)
{
    for (;;) {
        uint32_t hdr[2];
        if (!pg_read_full(c, hdr, 8, PG_STARTUP_SECS))
            return false;
        uint32_t len = ntohl(hdr[0]), code = ntohl(hdr[1]);
        if (len < 8 || len > PG_MAX_STARTUP) {
            fatal(c, "08P01", "invalid length of startup packet");
            return false;
        }
        buf_reset(&c->msg);
        buf_reserve(&c->msg, len - 8 + 1);
        if (!pg_read_full(c, c->msg.p, len - 8, PG_STARTUP_SECS))
            return false;
        c->msg.n = len - 8;
        if (code == 80877103 && c->s->cred && !c->tls) { /* SSLRequest: TLS */
            if (send(c->fd, "S", 1, MSG_NOSIGNAL) != 1 || !tls_handshake(c))
                return false;
            continue;
        }
        if (code == 80877103 || code == 80877104) { /* SSLRequest, GSSENCRequest: no */
            if (send(c->fd, "N", 1, MSG_NOSIGNAL) != 1)
                return false;
            continue;
        }
        if (code == 80877102) /* CancelRequest: not supported, just close */
            return false;
        if (code >> 16 != 3) {
            char m[128];
            snprintf(m, sizeof(m), "unsupported frontend protocol %u.%u: server supports 3.0",
                     code >> 16, code & 0xFFFF);
            fatal(c, "0A000", m);
            return false;
        }
        PgRd r = {(const char *)c->msg.p, c->msg.n, 0, false};
        while (r.pos < r.n && r.p[r.pos]) {
            const char *k = pgrd_str(&r), *v = pgrd_str(&r);
            if (r.bad)
                break;
            if (!strcmp(k, "user"))
                snprintf(c->user, sizeof(c->user), "%s", v);
            else if (!strcmp(k, "database"))
                snprintf(c->db, sizeof(c->db), "%s", v);
            else if (!strcmp(k, "application_name") || !strcmp(k, "client_encoding") ||
                     !strcmp(k, "DateStyle") || !strcmp(k, "TimeZone")) {
                PgSetting *s = VEC_PUSH(c->set, c->nset, c->capset);
                s->name = sl_strdup(k);
                s->value = sl_strdup(v);
            }
        }
        if (r.bad) {
            fatal(c, "08P01", "invalid startup packet layout");
            return false;
        }
        break;
    }
    if (!c->db[0])
        snprintf(c->db, sizeof(c->db), "%s", c->user[0] ? c->user : "sluice");
    PgServer *s = c->s;
    if (s->o.nkeys) {
        pg_begin(c, 'R');
        pg_i32(c, 3); /* AuthenticationCleartextPassword */
        pg_end(c);
        if (!pg_flush(c))
            return false;
        char t;
        uint32_t len;
        if (!pg_read_full(c, &t, 1, PG_STARTUP_SECS) ||
            !pg_read_full(c, &len, 4, PG_STARTUP_SECS))
            return false;
        len = ntohl(len);
        if (t != 'p' || len < 5 || len > 4096) {
            fatal(c, "08P01", "expected a password message");
            return false;
        }
        char pw[4096];
        if (!pg_read_full(c, pw, len - 4, PG_STARTUP_SECS))
            return false;
        pw[len - 5] = 0;
        const ServerKey *key = NULL;
        for (int i = 0; i < s->o.nkeys; i++)
            if (key_equal(pw, s->o.keys[i].key) && !key)
                key = &s->o.keys[i];
        if (!key) {
            char m[256];
            snprintf(m, sizeof(m),
                     "password authentication failed for user \"%.64s\": the password must be "
                     "an API key of the pipeline (--api-key)",
                     c->user);
            fatal(c, "28P01", m);
            return false;
        }
        c->read_only = key->read_only;
    }
    pg_begin(c, 'R');
    pg_i32(c, 0); /* AuthenticationOk */
    pg_end(c);
    const char *app = pg_setting(c, "application_name");
    pg_param_status(c, "server_version", PG_SERVER_VERSION);
    pg_param_status(c, "server_encoding", "UTF8");
    pg_param_status(c, "client_encoding", "UTF8");
    pg_param_status(c, "DateStyle", "ISO, MDY");
    pg_param_status(c, "TimeZone", "UTC");
    pg_param_status(c, "IntervalStyle", "postgres");
    pg_param_status(c, "integer_datetimes", "on");
    pg_param_status(c, "standard_conforming_strings", "on");
    pg_param_status(c, "is_superuser", "off");
    pg_param_status(c, "session_authorization", c->user);
    pg_param_status(c, "application_name", app ? app : "");
    pg_begin(c, 'K');
    pg_i32(c, (int32_t)c->pid);
    pg_i32(c, (int32_t)(c->pid * 2654435761u));
    pg_end(c);
    pg_ready(c);
    return pg_flush(c);
}

/* The message loop of an authenticated session. */
static void serve(PgConn *c)
{
    while (!c->broken) {
        char t;
        if (pg_read_msg(c, &t))
            return;
        if (t == 'X')
            return;
        if (t == 'Q') {
            if (!memchr(c->msg.p, 0, c->msg.n)) {
                fatal(c, "08P01", "invalid Query message: no terminating zero byte");
                return;
            }
            c->skip_to_sync = false;
            pg_simple_query(c, (const char *)c->msg.p);
            pg_flush(c);
            continue;
        }
        if (!pg_extended(c, t))
            return;
    }
}

static void *session_main(void *arg)
{
    PgConn *c = arg;
    PgServer *s = c->s;
    if (startup(c))
        serve(c);
    if (c->in_block) { /* a transaction the session opened and left: abort it */
        PgErr e;
        pg_end_block(c, false, &e);
    }
    pthread_mutex_lock(&s->mu);
    for (PgConn **pc = &s->conns; *pc; pc = &(*pc)->next)
        if (*pc == c) {
            *pc = c->next;
            break;
        }
    pthread_mutex_unlock(&s->mu);
    if (c->tls) {
        gnutls_bye(c->tls, GNUTLS_SHUT_WR);
        gnutls_deinit(c->tls);
    }
    close(c->fd);
    pg_ext_free(c);
    for (int i = 0; i < c->nset; i++) {
        sl_free(c->set[i].name);
        sl_free(c->set[i].value);
    }
    sl_free(c->set);
    buf_free(&c->out);
    buf_free(&c->msg);
    sl_free(c);
    pthread_mutex_lock(&s->mu);
    if (--s->nconn == 0)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

static void *accept_main(void *arg)
{
    PgServer *s = arg;
    for (;;) {
        struct pollfd pf[2] = {{s->lfd, POLLIN, 0}, {s->wake[0], POLLIN, 0}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if (pf[1].revents)
            break;
        if (!(pf[0].revents & POLLIN))
            continue;
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        struct timeval tv = {60, 0}; /* a client that reads nothing for this long is dropped */
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
        PgConn *c = sl_calloc(1, sizeof(*c));
        c->s = s;
        c->fd = fd;
        pthread_mutex_lock(&s->mu);
        bool full = s->nconn >= s->o.max_connections || s->stopping;
        if (!full) {
            s->nconn++;
            c->pid = ++s->next_pid;
            c->next = s->conns;
            s->conns = c;
        }
        pthread_mutex_unlock(&s->mu);
        if (full) {
            fatal(c, "53300", "sorry, too many clients already (--pg sessions are bounded)");
            close(fd);
            buf_free(&c->out);
            sl_free(c);
            continue;
        }
        pthread_attr_t at;
        pthread_t t;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&at, (size_t)1 << 20);
        if (pthread_create(&t, &at, session_main, c)) {
            pthread_attr_destroy(&at);
            pthread_mutex_lock(&s->mu);
            for (PgConn **pc = &s->conns; *pc; pc = &(*pc)->next)
                if (*pc == c) {
                    *pc = c->next;
                    break;
                }
            s->nconn--;
            pthread_mutex_unlock(&s->mu);
            close(fd);
            sl_free(c);
            continue;
        }
        pthread_attr_destroy(&at);
    }
    return NULL;
}

PgServer *pgwire_start(Pipeline *p, const PgOpts *o, Err *err)
{
    char port[16];
    snprintf(port, sizeof(port), "%d", o->port);
    struct addrinfo hints = {0}, *ai = NULL;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    const char *host = o->host && *o->host ? o->host : "127.0.0.1";
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        err_set(err, SL_ECONFIG, "--pg: cannot resolve \"%s\": %s", host, gai_strerror(rc));
        return NULL;
    }
    int fd = -1;
    for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
        if (fd < 0)
            continue;
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, a->ai_addr, a->ai_addrlen) || listen(fd, 64)) {
            close(fd);
            fd = -1;
        }
    }
    freeaddrinfo(ai);
    if (fd < 0) {
        err_set(err, SL_EIO, "--pg: cannot listen on %s:%d: %s", host, o->port, strerror(errno));
        return NULL;
    }
    gnutls_certificate_credentials_t cred = NULL;
    if (!o->tls_cert != !o->tls_key) {
        close(fd);
        err_set(err, SL_ECONFIG, "--tls-cert and --tls-key go together: give both or neither");
        return NULL;
    }
    if (o->tls_cert) {
        rc = gnutls_certificate_allocate_credentials(&cred);
        if (rc >= 0)
            rc = gnutls_certificate_set_x509_key_file(cred, o->tls_cert, o->tls_key,
                                                      GNUTLS_X509_FMT_PEM);
        if (rc < 0) {
            if (cred)
                gnutls_certificate_free_credentials(cred);
            close(fd);
            err_set(err, SL_ECONFIG, "--pg: cannot use the TLS certificate %s and key %s: %s",
                    o->tls_cert, o->tls_key, gnutls_strerror(rc));
            return NULL;
        }
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    PgServer *s = sl_calloc(1, sizeof(*s));
    s->p = p;
    s->c = pipeline_circuit(p);
    s->o = *o;
    if (s->o.max_connections <= 0)
        s->o.max_connections = 64;
    s->lfd = fd;
    s->cred = cred;
    s->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    if (pipe2(s->wake, O_CLOEXEC) || pthread_create(&s->th, NULL, accept_main, s)) {
        err_set(err, SL_EIO, "--pg: cannot start: %s", strerror(errno));
        if (cred)
            gnutls_certificate_free_credentials(cred);
        close(fd);
        sl_free(s);
        return NULL;
    }
    PipelineHooks h = {s, pg_subs_after_step};
    pipeline_add_hooks(p, &h);
    fprintf(stderr, "sluice: pg: listening on %s:%d%s\n", host, s->port,
            cred ? " (TLS offered)" : "");
    fflush(stderr);
    return s;
}

int pgwire_port(const PgServer *s) { return s->port; }

void pgwire_stop(PgServer *s)
{
    if (!s)
        return;
    if (write(s->wake[1], "x", 1) != 1)
        sl_panic("pg: cannot wake the accept loop");
    pthread_join(s->th, NULL);
    /* subscriptions end their streams (CopyDone), sessions notice the stop
       at their next read; those that do not within a few seconds (a client
       that does not read) have their sockets shut down */
    pthread_mutex_lock(&s->mu);
    __atomic_store_n(&s->stopping, true, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&s->mu);
    pg_subs_end_all(s);
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_sec += 5;
    pthread_mutex_lock(&s->mu);
    while (s->nconn > 0 && pthread_cond_timedwait(&s->cv, &s->mu, &dl) == 0)
        ;
    for (PgConn *c = s->conns; c; c = c->next)
        shutdown(c->fd, SHUT_RDWR);
    while (s->nconn > 0)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    pg_subs_free(s);
    if (s->cred)
        gnutls_certificate_free_credentials(s->cred);
    close(s->lfd);
    close(s->wake[0]);
    close(s->wake[1]);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    sl_free(s);
}
