/* Service-time emulation, run by worker threads (no libcoap here). */
#ifndef DEV_SERVICE_H
#define DEV_SERVICE_H

#include <stdatomic.h>
#include <stdint.h>

#include "cli.h"

/* Spends service_ns the way the mode says; returns early (0) when *stop is
 * set, 1 when the full time was served. */
int service_emulate(enum dev_mode mode, int64_t service_ns,
                    const atomic_bool *stop);

int64_t mono_ns(void);

#endif
