/* The device's side of docs/formats.md. harness/base/formats.py is the
 * Python mirror; harness/tests/test_formats.py compares the three. */
#ifndef DEV_FORMAT_H
#define DEV_FORMAT_H

/* Resource CSV: required header columns (in this order in files tracegen
 * writes; the parser finds them by name) and the optional one. */
#define DEV_RESOURCE_COLUMNS "path,service_us"
#define DEV_RESOURCE_OPTIONAL_COLUMNS "payload_bytes"
/* ... and the optional Observe columns (any subset, found by name). */
#define DEV_RESOURCE_OBSERVE_COLUMNS                                           \
  "observe_rit,notify_type,max_age,observe_seed"
#define DEV_METHODS "GET,PUT,POST,DELETE"

/* CoAP option (elective, experimental range): the service time in us. */
#define DEV_SERVICE_TIME_OPTION 65000
/* CoAP option (elective): on the answer to a deregistration (GET with
 * Observe 1), the last notification seq sent to that observation. */
#define DEV_LAST_SEQ_OPTION 65001
#define DEV_DEFAULT_COAP_PORT 5683
#define DEV_MAX_SERVICE_US 1000000000ULL
#define DEV_MAX_PAYLOAD_BYTES 1024
#define DEV_MAX_PATH_BYTES 255
/* --stats JSON: "format", "cpus", then DEV_COUNTERS (counters.h). */
#define DEV_STATS_FORMAT 1

/* Response codes, as (class << 5 | detail). */
#define DEV_CODE_CONTENT 0x45     /* 2.05 GET */
#define DEV_CODE_CHANGED 0x44     /* 2.04 PUT, POST */
#define DEV_CODE_DELETED 0x42     /* 2.02 DELETE */
#define DEV_CODE_BAD_OPTION 0x82  /* 4.02 */
#define DEV_CODE_NOT_FOUND 0x84   /* 4.04 */
#define DEV_CODE_BAD_METHOD 0x85  /* 4.05 */
#define DEV_CODE_UNAVAILABLE 0xa3 /* 5.03 queue full */

#endif
