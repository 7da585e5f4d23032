/* What the device counts, printed as one line on stderr at exit and
 * optionally written as JSON (--stats). */
#ifndef DEV_COUNTERS_H
#define DEV_COUNTERS_H

#include <stdint.h>
#include <stdio.h>

struct dev_counters {
	uint64_t datagrams;   /* received */
	uint64_t requests;    /* well-formed requests, duplicates included */
	uint64_t served;      /* requests answered (any code), duplicates excluded */
	uint64_t ok;	      /* of which 2.xx */
	uint64_t inline_zero; /* of which answered by the network thread (S = 0) */
	uint64_t not_found, bad_method, bad_option, overflow, wkc;
	uint64_t duplicates;  /* requests recognised as retransmissions */
	uint64_t dup_replies; /* ... answered again (finished or separate exchanges) */
	uint64_t garbage;     /* datagrams that are not CoAP */
	uint64_t ignored;     /* CoAP but nothing to do (responses, stray ACK/RST) */
	uint64_t pings;	      /* empty CON answered with RST */
	uint64_t dropped;     /* accepted but unanswered at shutdown */
	uint64_t send_errors;
	uint64_t dedup_evictions;
	uint64_t separate, retransmits, sep_acked, sep_reset, sep_gave_up, sep_untracked;
};

/* One line, `key=value` pairs, for stderr. */
void counters_print(FILE *f, const struct dev_counters *c);

/* JSON via temp file + rename; returns 0 or -1 (message printed). */
int counters_write_json(const char *file, const struct dev_counters *c);

#endif
