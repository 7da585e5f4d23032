/* devload: closed-loop CoAP/UDP load for measuring the device's maximum
 * request rate. Keeps WINDOW requests in flight (a new one per response),
 * so the rate it reports is what the device sustains, not what was asked.
 * Benchmark tool only; the gateway emulator is the open-loop generator. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "benchreq.h"

#define BATCH 64

static int64_t now_ns(void) {
  struct timespec ts;

  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The bench driver: options, setup, one load loop and the report over
 * buffers on its stack; a bench tool, not part of the device. */
/* NOLINTNEXTLINE(readability-function-size): one linear bench sequence */
int main(int argc, char **argv) {
  struct sockaddr_in dst = {.sin_family = AF_INET};
  const char *path = "a";
  int window = 64, con = 0, c, fd;
  double seconds = 5;
  uint64_t got = 0, sent = 0, lost = 0;
  uint32_t seq = 0;
  int inflight = 0;
  uint8_t rbuf[BATCH][1500], sbuf[BATCH][BENCHREQ_MAX];
  struct mmsghdr rm[BATCH], sm[BATCH];
  struct iovec riov[BATCH], siov[BATCH];
  struct timeval tv = {0, 200000};
  int64_t t0, end;

  dst.sin_port = htons(5683);
  inet_pton(AF_INET, "127.0.0.1", &dst.sin_addr);
  while ((c = getopt(argc, argv, "p:P:w:s:c")) != -1) {
    switch (c) {
    case 'p': dst.sin_port = htons((uint16_t)atoi(optarg)); break;
    case 'P': path = optarg; break;
    case 'w': window = atoi(optarg); break;
    case 's': seconds = atof(optarg); break;
    case 'c': con = 1; break;
    default:
      fprintf(
          stderr,
          "usage: devload [-p PORT] [-P PATH] [-w WINDOW] [-s SECONDS] [-c]\n");
      return 2;
    }
  }
  if (window < 1 || window > 100000 || strlen(path) > BENCHREQ_MAX_PATH) {
    fprintf(stderr, "error: window 1..100000, path <= 200 bytes\n");
    return 2;
  }
  fd = socket(AF_INET, SOCK_DGRAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&dst, sizeof(dst)) < 0 ||
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
    perror("devload: socket");
    return 1;
  }
  for (int i = 0; i < BATCH; i++) {
    riov[i] = (struct iovec){rbuf[i], sizeof(rbuf[i])};
    siov[i] = (struct iovec){sbuf[i], 0};
    memset(&rm[i], 0, sizeof(rm[i]));
    memset(&sm[i], 0, sizeof(sm[i]));
    rm[i].msg_hdr.msg_iov = &riov[i];
    rm[i].msg_hdr.msg_iovlen = 1;
    sm[i].msg_hdr.msg_iov = &siov[i];
    sm[i].msg_hdr.msg_iovlen = 1;
  }
  t0 = now_ns();
  end = t0 + (int64_t)(seconds * 1e9);
  while (now_ns() < end) {
    int want = window - inflight, k = 0, r;

    while (want > 0) {
      k = want < BATCH ? want : BATCH;
      for (int i = 0; i < k; i++)
        siov[i].iov_len = benchreq_build(sbuf[i], con, seq++, path);
      r = sendmmsg(fd, sm, (unsigned)k, 0);
      if (r < 0) {
        perror("devload: sendmmsg");
        return 1;
      }
      sent += (unsigned)r;
      inflight += r;
      want -= r;
    }
    r = recvmmsg(fd, rm, BATCH, 0, NULL);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      /* Nothing for 200 ms: whatever is in flight was dropped. */
      lost += (unsigned)inflight;
      inflight = 0;
      continue;
    }
    if (r < 0) {
      perror("devload: recvmmsg");
      return 1;
    }
    got += (unsigned)r;
    inflight -= r;
    if (inflight < 0)
      inflight = 0;
  }
  printf("{\"seconds\": %.3f, \"sent\": %llu, \"responses\": %llu, "
         "\"lost\": %llu, \"rate\": %.0f, \"window\": %d, \"type\": \"%s\"}\n",
         (double)(now_ns() - t0) / 1e9, (unsigned long long)sent,
         (unsigned long long)got, (unsigned long long)lost,
         (double)got * 1e9 / (double)(now_ns() - t0), window,
         con ? "con" : "non");
  close(fd);
  return 0;
}
