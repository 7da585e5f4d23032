/* epoll on socket + completion eventfd + signalfd; recvmmsg in, sendmmsg
 * out. Requests of zero service time are answered right here; the rest go
 * to the workers and come back as completions. */
#include "loop.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "dedup.h"
#include "sepresp.h"
#include "service.h"
#include "tx.h"
#include "wire.h"
#include "workers.h"

#define RX_BATCH 64
#define RX_BATCHES_PER_WAKE 8 /* then serve completions, so neither starves */
#define RX_MAX 2048	      /* a CoAP/UDP message is < 1280 bytes in practice */
#define SEP_TABLE 4096
#define MAX_WAIT_MS 100 /* completions are also drained on this tick */
#define WKC_PATH ".well-known/core"

struct loop {
	const struct dev_config *cfg;
	const struct registry *reg;
	struct dev_counters *c;
	struct dedup dd;
	struct sepresp sep;
	struct workers wk;
	coap_pdu_t *pdu;
	int sock, sigfd, epfd;
	int stop;
	uint16_t next_mid;
	struct wire_request req;
	uint32_t done[256];
	struct mmsghdr rmsgs[RX_BATCH];
	struct iovec riov[RX_BATCH];
	struct peer rpeers[RX_BATCH];
	uint8_t rbuf[RX_BATCH][RX_MAX];
	struct tx tx;
};

static uint8_t method_code(uint8_t method)
{
	switch (method) {
	case COAP_REQUEST_CODE_GET:
		return DEV_CODE_CONTENT;
	case COAP_REQUEST_CODE_POST:
	case COAP_REQUEST_CODE_PUT:
		return DEV_CODE_CHANGED;
	case COAP_REQUEST_CODE_DELETE:
		return DEV_CODE_DELETED;
	default:
		return 0;
	}
}

static void count_answer(struct dev_counters *c, const struct recipe *rc)
{
	c->served++;
	switch (rc->code) {
	case DEV_CODE_NOT_FOUND:
		c->not_found++;
		break;
	case DEV_CODE_BAD_METHOD:
		c->bad_method++;
		break;
	case DEV_CODE_BAD_OPTION:
		c->bad_option++;
		break;
	case DEV_CODE_UNAVAILABLE:
		c->overflow++;
		break;
	default:
		c->ok += (rc->code >> 5) == 2;
	}
}

static void send_empty(struct loop *L, const struct peer *p, uint8_t type, uint16_t mid)
{
	struct recipe rc = { .kind = RC_EMPTY, .type = type, .mid = mid, .block2 = -1 };

	tx_send(&L->tx, p, &rc, L->reg);
}

/* Sends rc now and records it so that a duplicate gets the same bytes. */
static void answer_now(struct loop *L, const struct peer *p, struct dd_entry *e,
		       struct recipe *rc)
{
	tx_send(&L->tx, p, rc, L->reg);
	e->state = DD_DONE;
	e->rc = *rc;
	count_answer(L->c, rc);
}

static void answer_duplicate(struct loop *L, const struct peer *p, struct dd_entry *e)
{
	L->c->duplicates++;
	if (e->state == DD_SEPARATE) {
		/* The empty ACK may have been lost; the CON response has its own
		 * retransmission. */
		send_empty(L, p, WIRE_ACK, e->mid);
		L->c->dup_replies++;
	} else if (e->state == DD_DONE) {
		tx_send(&L->tx, p, &e->rc, L->reg);
		L->c->dup_replies++;
	}
	/* DD_PENDING: still in service; the answer is coming. */
}

/* Hands the request to a worker; 0 if the queue is full. */
static int enqueue(struct loop *L, const struct peer *p, struct dd_entry *e,
		   const struct recipe *rc, int64_t service_ns)
{
	struct job *job = workers_alloc(&L->wk);

	if (job == NULL)
		return 0;
	job->peer = *p;
	job->rc = *rc;
	job->service_ns = service_ns;
	job->dd_slot = dedup_slot(&L->dd, e);
	job->dd_gen = e->gen;
	/* A piggybacked answer must beat the client's ACK_TIMEOUT. */
	job->separate = L->req.type == WIRE_CON && service_ns >= SEP_ACK_TIMEOUT_NS;
	if (workers_submit(&L->wk, job) < 0)
		return 0;
	if (job->separate) {
		e->state = DD_SEPARATE;
		send_empty(L, p, WIRE_ACK, L->req.mid);
	}
	return 1;
}

static void on_request(struct loop *L, const struct peer *p, int64_t now)
{
	const struct wire_request *q = &L->req;
	const struct reg_entry *res = NULL;
	struct dd_entry *e;
	struct recipe rc;
	uint8_t addr[16];
	uint16_t port;

	L->c->requests++;
	peer_key(p, addr, &port);
	e = dedup_find(&L->dd, addr, port, q->mid, now);
	/* Same MID with another token is a new request from a client whose
	 * MIDs wrapped within EXCHANGE_LIFETIME (a fast load generator). */
	if (e && e->tkl == q->tkl && memcmp(e->token, q->token, q->tkl) == 0) {
		answer_duplicate(L, p, e);
		return;
	}
	e = dedup_claim(&L->dd, e, addr, port, q->mid, now);
	e->tkl = q->tkl;
	memcpy(e->token, q->token, sizeof(e->token));

	memset(&rc, 0, sizeof(rc));
	rc.kind = RC_BARE;
	rc.type = q->type == WIRE_CON ? WIRE_ACK : WIRE_NON;
	rc.mid = q->type == WIRE_CON ? q->mid : L->next_mid++;
	rc.tkl = q->tkl;
	memcpy(rc.token, q->token, sizeof(rc.token));
	rc.block2 = -1;

	if (q->bad_option) {
		rc.code = DEV_CODE_BAD_OPTION;
	} else if (q->path_len == sizeof(WKC_PATH) - 1 && memcmp(q->path, WKC_PATH, q->path_len) == 0) {
		rc.code = q->code == COAP_REQUEST_CODE_GET ? DEV_CODE_CONTENT : DEV_CODE_BAD_METHOD;
		if (rc.code == DEV_CODE_CONTENT) {
			rc.kind = RC_WKC;
			rc.block2 = q->has_block2 ? (int32_t)q->block2 : -1;
			L->c->wkc++;
		}
	} else if (q->path_overflow || (res = registry_find(L->reg, q->path, q->path_len)) == NULL) {
		rc.code = DEV_CODE_NOT_FOUND;
	} else {
		rc.res = res;
		rc.code = method_code(q->code);
		rc.kind = rc.code ? RC_OK : RC_ERR;
		if (rc.code == 0)
			rc.code = DEV_CODE_BAD_METHOD;
		else if (res->service_ns > 0 && enqueue(L, p, e, &rc, res->service_ns))
			return;
		else if (res->service_ns > 0) {
			rc.kind = RC_ERR;
			rc.code = DEV_CODE_UNAVAILABLE;
		} else {
			L->c->inline_zero++;
		}
	}
	answer_now(L, p, e, &rc);
}

static void on_datagram(struct loop *L, const uint8_t *buf, size_t len, const struct peer *p,
			int64_t now)
{
	L->c->datagrams++;
	switch (wire_parse(L->pdu, buf, len, &L->req)) {
	case WIRE_REQUEST:
		on_request(L, p, now);
		break;
	case WIRE_PING:
		L->c->pings++;
		send_empty(L, p, WIRE_RST, L->req.mid);
		break;
	case WIRE_EMPTY_ACK:
	case WIRE_EMPTY_RST:
		if (!sep_ack(&L->sep, p, L->req.mid, L->req.type == WIRE_RST))
			L->c->ignored++;
		break;
	case WIRE_OTHER:
		L->c->ignored++;
		break;
	default:
		L->c->garbage++;
	}
}

static int receive(struct loop *L)
{
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
			if (errno == ECONNREFUSED || errno == EHOSTUNREACH || errno == ENETUNREACH)
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
			on_datagram(L, L->rbuf[i], L->rmsgs[i].msg_len, &L->rpeers[i], now);
		}
		if (n < RX_BATCH)
			return 0;
	}
	return 0;
}

static void complete_jobs(struct loop *L, int64_t now)
{
	size_t n;

	while ((n = workers_take_done(&L->wk, L->done, sizeof(L->done) / sizeof(L->done[0]))) > 0) {
		for (size_t i = 0; i < n; i++) {
			struct job *job = &L->wk.pool[L->done[i]];
			struct dd_entry *e = dedup_at(&L->dd, job->dd_slot, job->dd_gen);

			if (job->separate) {
				job->rc.type = WIRE_CON;
				job->rc.mid = L->next_mid++;
				tx_send(&L->tx, &job->peer, &job->rc, L->reg);
				sep_track(&L->sep, &job->peer, &job->rc, now);
			} else {
				tx_send(&L->tx, &job->peer, &job->rc, L->reg);
				if (e != NULL) {
					e->state = DD_DONE;
					e->rc = job->rc;
				}
			}
			count_answer(L->c, &job->rc);
			workers_release(&L->wk, job);
		}
	}
}

static void resend(void *ctx, const struct peer *p, const struct recipe *rc)
{
	struct loop *L = ctx;
	struct recipe copy = *rc;

	tx_send(&L->tx, p, &copy, L->reg);
}

static int drain_fd(int fd, size_t size)
{
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

static int wait_ms(const struct loop *L, int64_t now)
{
	int64_t due = sep_next_due(&L->sep);
	int64_t ms = MAX_WAIT_MS;

	if (due != INT64_MAX) {
		int64_t d = (due - now + 999999) / 1000000;

		if (d < ms)
			ms = d < 0 ? 0 : d;
	}
	return (int)ms;
}

static int serve(struct loop *L)
{
	struct epoll_event evs[4];

	while (!L->stop) {
		int64_t now = mono_ns();
		int n = epoll_wait(L->epfd, evs, 4, wait_ms(L, now));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			perror("error: epoll_wait");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			int fd = evs[i].data.fd;

			if (fd == L->sock && receive(L) < 0)
				return -1;
			if (fd == L->wk.efd && drain_fd(fd, sizeof(uint64_t)) < 0) {
				perror("error: eventfd read");
				return -1;
			}
			if (fd == L->sigfd && drain_fd(fd, sizeof(struct signalfd_siginfo)) > 0)
				L->stop = 1;
		}
		now = mono_ns();
		complete_jobs(L, now);
		sep_tick(&L->sep, now, resend, L);
		tx_flush(&L->tx);
	}
	return 0;
}

static int watch(int epfd, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

	if (epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		perror("error: epoll_ctl");
		return -1;
	}
	return 0;
}

static void collect(struct loop *L, uint32_t unanswered)
{
	struct dev_counters *c = L->c;

	c->dropped += unanswered;
	c->send_errors = L->tx.errors;
	c->dedup_evictions = L->dd.evictions;
	c->separate = L->sep.st.started;
	c->retransmits = L->sep.st.retransmits;
	c->sep_acked = L->sep.st.acked;
	c->sep_reset = L->sep.st.reset;
	c->sep_gave_up = L->sep.st.gave_up;
	c->sep_untracked = L->sep.st.untracked;
}

int loop_run(const struct dev_config *cfg, const struct registry *reg, int sock, int sigfd,
	     struct dev_counters *c)
{
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
	L->sock = L->tx.fd = sock;
	L->sigfd = sigfd;
	L->next_mid = (uint16_t)(mono_ns() ^ getpid());
	L->epfd = epoll_create1(EPOLL_CLOEXEC);
	L->pdu = coap_pdu_init(0, 0, 0, RX_MAX);
	if (L->epfd < 0 || L->pdu == NULL) {
		fputs("error: cannot create epoll instance or PDU\n", stderr);
		goto out;
	}
	if (dedup_init(&L->dd, cfg->dedup_entries) < 0 ||
	    sep_init(&L->sep, SEP_TABLE, (uint64_t)mono_ns()) < 0) {
		fputs("error: out of memory for the dedup cache\n", stderr);
		goto out;
	}
	if (workers_start(&L->wk, cfg->mode, cfg->threads, cfg->queue_cap) < 0)
		goto out;
	have_workers = 1;
	if (watch(L->epfd, sock) < 0 || watch(L->epfd, L->wk.efd) < 0 || watch(L->epfd, sigfd) < 0)
		goto out;
	rc = serve(L);
out:
	if (have_workers)
		unanswered = workers_stop(&L->wk);
	tx_flush(&L->tx);
	collect(L, unanswered);
	sep_free(&L->sep);
	dedup_free(&L->dd);
	if (L->pdu)
		coap_delete_pdu(L->pdu);
	if (L->epfd >= 0)
		close(L->epfd);
	free(L);
	return rc;
}
