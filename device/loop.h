/* The network thread: the one owner of the socket, libcoap, the dedup
 * cache and the separate-response table. */
#ifndef DEV_LOOP_H
#define DEV_LOOP_H

#include "cli.h"
#include "counters.h"
#include "registry.h"

/* Serves until SIGTERM/SIGINT arrives on sigfd. Fills *c and counts every
 * served request's residence and queue wait into *h (zeroed by the caller).
 * Returns 0, or -1 after an unrecoverable error (message printed). */
int loop_run(const struct dev_config *cfg, const struct registry *reg, int sock,
             int sigfd, struct dev_counters *c, struct dev_hists *h);

#endif
