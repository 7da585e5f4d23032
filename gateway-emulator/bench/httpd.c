/* bench-ge's trivial HTTP/1.1 server: one thread, epoll, keep-alive,
 * "200 ok" to every request as fast as it can. Both the GE (--north
 * http) and wrk drive it in bench_ge_http.py. Usage: ge-httpd PORT (0: any;
 * the port is printed on stderr once listening on 127.0.0.1). A request
 * ends at its empty line plus its Content-Length; a short write of the
 * answer (never with one request in flight) closes the connection. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define CONN_BUF 16384

static const char answer[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

struct conn {
  int fd;
  size_t len, body_left;
  char buf[CONN_BUF];
};

/* The Content-Length of the head h[0, n), 0 when none. */
static size_t content_length(const char *h, size_t n) {
  static const char key[] = "\ncontent-length:";
  for (size_t i = 0; i + sizeof key - 1 < n; i++)
    if (!strncasecmp(h + i, key, sizeof key - 1))
      return (size_t)strtoul(h + i + sizeof key - 1, NULL, 10);
  return 0;
}

/* Complete requests at the front of c->buf, taken off: how many. */
static unsigned requests(struct conn *c) {
  unsigned got = 0;
  size_t off = 0;
  for (;;) {
    if (c->body_left) {
      size_t k = c->len - off < c->body_left ? c->len - off : c->body_left;
      off += k;
      c->body_left -= k;
      if (c->body_left)
        break;
    }
    char *end = memmem(c->buf + off, c->len - off, "\r\n\r\n", 4);
    if (!end)
      break;
    size_t head = (size_t)(end - (c->buf + off)) + 4;
    c->body_left = content_length(c->buf + off, head);
    off += head;
    got++;
  }
  memmove(c->buf, c->buf + off, c->len - off);
  c->len -= off;
  return got;
}

/* Reads c, answers each complete request: 0, or -1 to close it. */
static int serve(struct conn *c) {
  int fd = c->fd;
  static char out[64 * sizeof answer];
  for (;;) {
    if (c->len == CONN_BUF)
      return -1; /* a head longer than the buffer */
    ssize_t r = read(fd, c->buf + c->len, CONN_BUF - c->len);
    if (r < 0 && (errno == EAGAIN || errno == EINTR))
      return 0;
    if (r <= 0)
      return -1;
    c->len += (size_t)r;
    unsigned n = requests(c);
    while (n) {
      unsigned k = n < 64 ? n : 64;
      for (unsigned i = 0; i < k; i++)
        memcpy(out + i * (sizeof answer - 1), answer, sizeof answer - 1);
      size_t w = k * (sizeof answer - 1);
      if (write(fd, out, w) != (ssize_t)w)
        return -1;
      n -= k;
    }
  }
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0), on = 1;
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof on) ||
      bind(fd, (struct sockaddr *)&a, sizeof a) || listen(fd, 4096) ||
      getsockname(fd, (struct sockaddr *)&a, &len)) {
    perror("ge-httpd: listen");
    exit(1);
  }
  fprintf(stderr, "ge-httpd: listening on 127.0.0.1:%u\n", ntohs(a.sin_port));
  return fd;
}

static void accept_all(int ep, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK), on = 1;
    if (fd < 0)
      return;
    struct conn *c = calloc(1, sizeof *c);
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
    if (c)
      c->fd = fd;
    if (!c || setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof on) ||
        epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev)) {
      free(c);
      close(fd);
    }
  }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: ge-httpd PORT\n");
    return 2;
  }
  int lfd = listen_on(atoi(argv[1]));
  int ep = epoll_create1(0);
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = NULL};
  if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev)) {
    perror("ge-httpd: epoll");
    return 1;
  }
  for (;;) {
    struct epoll_event ev[64];
    int n = epoll_wait(ep, ev, 64, -1);
    for (int i = 0; i < n; i++) {
      if (!ev[i].data.ptr) {
        accept_all(ep, lfd);
        continue;
      }
      struct conn *c = ev[i].data.ptr;
      if (serve(c)) {
        close(c->fd); /* leaves the epoll set */
        free(c);
      }
    }
  }
}
