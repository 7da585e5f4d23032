/* epoll on socket + completion eventfd + signalfd; recvmmsg in, sendmmsg
 * out (dispatch.c decides what to answer). */
#include "loop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "net.h"
#include "service.h"

static int receive(struct loop *L) {
  for (int round = 0; round < RX_BATCHES_PER_WAKE; round++) {
    int n;
    int64_t now;

    for (int i = 0; i < RX_BATCH; i++) {
      L->riov[i].iov_base = L->rbuf[i];
      L->riov[i].iov_len = RX_MAX;
      memset(&L->rmsgs[i].msg_hdr, 0, sizeof(L->rmsgs[i].msg_hdr));
      L->rmsgs[i].msg_hdr.msg_name = &L->rpeers[i].u;
      L->rmsgs[i].msg_hdr.msg_namelen = sizeof(L->rpeers[i].u);
      L->rmsgs[i].msg_hdr.msg_iov = &L->riov[i];
      L->rmsgs[i].msg_hdr.msg_iovlen = 1;
    }
    n = recvmmsg(L->sock, L->rmsgs, RX_BATCH, MSG_DONTWAIT, NULL);
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return 0;
      /* ICMP errors from earlier sends surface here; not fatal. */
      if (errno == ECONNREFUSED || errno == EHOSTUNREACH ||
          errno == ENETUNREACH)
        continue;
      perror("error: recvmmsg");
      return -1;
    }
    now = mono_ns();
    for (int i = 0; i < n; i++) {
      struct msghdr *h = &L->rmsgs[i].msg_hdr;

      L->rpeers[i].len = h->msg_namelen;
      if (h->msg_flags & MSG_TRUNC) {
        L->c->datagrams++;
        L->c->garbage++;
        continue;
      }
      dispatch_datagram(L, L->rbuf[i], L->rmsgs[i].msg_len, &L->rpeers[i], now);
    }
    if (n < RX_BATCH)
      return 0;
  }
  return 0;
}

static int drain_fd(int fd, size_t size) {
  uint8_t buf[sizeof(struct signalfd_siginfo)];

  for (;;) {
    ssize_t r = read(fd, buf, size);

    if (r >= 0)
      return 1;
    if (errno == EINTR)
      continue;
    return errno == EAGAIN ? 0 : -1;
  }
}

static int wait_ms(const struct loop *L, int64_t now) {
  int64_t due = sep_next_due(&L->sep);
  int64_t ms = MAX_WAIT_MS;

  if (due != INT64_MAX) {
    int64_t d = (due - now + 999999) / 1000000;

    if (d < ms)
      ms = d < 0 ? 0 : d;
  }
  return (int)ms;
}

/* Points the timerfd at the observations' next due time (absolute, so a
 * late turn never shifts it); a syscall only when that time changed. */
static int arm(struct loop *L) {
  int64_t due = obs_next_due(&L->ob);
  struct itimerspec it;

  if (due == L->armed)
    return 0;
  memset(&it, 0, sizeof(it));
  if (due != INT64_MAX) {
    if (due <= 0)
      due = 1;
    it.it_value.tv_sec = due / 1000000000LL;
    it.it_value.tv_nsec = due % 1000000000LL;
  }
  if (timerfd_settime(L->tfd, TFD_TIMER_ABSTIME, &it, NULL) < 0) {
    perror("error: timerfd_settime");
    return -1;
  }
  L->armed = due;
  return 0;
}

/* One ready descriptor; -1 on an unrecoverable error. */
static int ready(struct loop *L, int fd) {
  if (fd == L->sock && receive(L) < 0)
    return -1;
  if ((fd == L->wk.efd || fd == L->tfd) && drain_fd(fd, sizeof(uint64_t)) < 0) {
    perror("error: eventfd/timerfd read");
    return -1;
  }
  if (fd == L->sigfd && drain_fd(fd, sizeof(struct signalfd_siginfo)) > 0)
    L->stop = 1;
  return 0;
}

static int serve(struct loop *L) {
  struct epoll_event evs[8];

  while (!L->stop) {
    int64_t now = mono_ns();
    int n = epoll_wait(L->epfd, evs, 8, wait_ms(L, now));

    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      perror("error: epoll_wait");
      return -1;
    }
    for (int i = 0; i < n; i++)
      if (ready(L, evs[i].data.fd) < 0)
        return -1;
    now = mono_ns();
    dispatch_completions(L, now);
    sep_tick(&L->sep, now, dispatch_resend, L);
    obs_tick(&L->ob, now);
    tx_flush(&L->tx);
    if (arm(L) < 0)
      return -1;
  }
  return 0;
}

static int watch(int epfd, int fd) {
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

  if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
    perror("error: epoll_ctl");
    return -1;
  }
  return 0;
}

static void collect(struct loop *L, uint32_t unanswered) {
  struct dev_counters *c = L->c;

  c->dropped += unanswered;
  c->send_errors = L->tx.errors;
  c->dedup_evictions = L->dd.evictions;
  c->dedup_slots = L->dd.limit;
  c->separate = L->sep.st.started;
  c->retransmits = L->sep.st.retransmits;
  c->sep_acked = L->sep.st.acked;
  c->sep_reset = L->sep.st.reset;
  c->sep_gave_up = L->sep.st.gave_up;
  c->sep_untracked = L->sep.st.untracked;
  c->obs_active = L->ob.live;
}

int loop_run(const struct dev_config *cfg, const struct registry *reg, int sock,
             int sigfd, struct dev_counters *c, struct dev_hists *h) {
  struct loop *L = calloc(1, sizeof(*L));
  int rc = -1, have_workers = 0;
  uint32_t unanswered = 0;

  if (L == NULL) {
    fputs("error: out of memory\n", stderr);
    return -1;
  }
  L->cfg = cfg;
  L->reg = reg;
  L->c = c;
  L->h = h;
  L->tx.residence = &h->residence_us;
  L->tx.lag = &h->notify_lag_us;
  L->sock = L->tx.fd = sock;
  L->sigfd = sigfd;
  L->next_mid = (uint16_t)(mono_ns() ^ getpid());
  L->epfd = epoll_create1(EPOLL_CLOEXEC);
  L->pdu = coap_pdu_init(0, 0, 0, RX_MAX);
  if (L->epfd < 0 || L->pdu == NULL) {
    fputs("error: cannot create epoll instance or PDU\n", stderr);
    goto out;
  }
  if (dedup_init(&L->dd, cfg->dedup_entries, cfg->exchange_lifetime_ns) < 0 ||
      sep_init(&L->sep, SEP_TABLE, (uint64_t)mono_ns()) < 0 ||
      obs_init(&L->ob, cfg->observers, reg, cfg->ack_timeout_ns,
               cfg->obs_seq_start, &L->next_mid, &L->tx, c) < 0) {
    fputs("error: out of memory for the dedup cache or observations\n", stderr);
    goto out;
  }
  L->armed = INT64_MAX;
  L->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  /* Notifications are due to the microsecond: no 50 us default slack. */
  if (L->tfd < 0 || prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL) < 0) {
    perror("error: timerfd_create/prctl");
    goto out;
  }
  if (workers_start(&L->wk, cfg->mode, cfg->threads, cfg->queue_cap) < 0)
    goto out;
  have_workers = 1;
  if (watch(L->epfd, sock) < 0 || watch(L->epfd, L->wk.efd) < 0 ||
      watch(L->epfd, sigfd) < 0 || watch(L->epfd, L->tfd) < 0)
    goto out;
  rc = serve(L);
out:
  if (have_workers)
    unanswered = workers_stop(&L->wk);
  tx_flush(&L->tx);
  collect(L, unanswered);
  sep_free(&L->sep);
  obs_free(&L->ob);
  dedup_free(&L->dd);
  if (L->tfd > 0)
    close(L->tfd);
  if (L->pdu)
    coap_delete_pdu(L->pdu);
  if (L->epfd >= 0)
    close(L->epfd);
  free(L);
  return rc;
}
