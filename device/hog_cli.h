/* wotbench-hog's command line: a noisy neighbour's kind, threads, episode
 * (absolute CLOCK_REALTIME instants in microseconds) and buffer size. */
#ifndef HOG_CLI_H
#define HOG_CLI_H

#include <stdint.h>

enum hog_kind { HOG_CPU, HOG_MEMBW };

struct hog_config {
  enum hog_kind kind;
  unsigned threads;
  int64_t start_at_us; /* epoch us (CLOCK_REALTIME) */
  int64_t end_at_us;   /* exclusive, > start_at_us */
  uint64_t buffer;     /* membw: bytes per thread, a multiple of 64 */
};

/* argv -> *cfg. Returns 0, or 2 after printing one `error: FIELD: what`
 * line (or the usage) on stderr. */
int hog_parse_args(int argc, char **argv, struct hog_config *cfg);

const char *hog_kind_name(enum hog_kind kind);

#endif
