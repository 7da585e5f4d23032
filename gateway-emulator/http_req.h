/* HTTP/1.1 requests to the gateway: the --http-path template and the
 * request bytes of one CoAP request (pure: no syscalls). */
#ifndef GE_HTTP_REQ_H
#define GE_HTTP_REQ_H

#include <netinet/in.h>
#include <stddef.h>

#define GE_HTTP_TEMPLATE_MAX 512
#define GE_HTTP_URI_VAR "{coap_uri}"
#define GE_HTTP_URI_VARS_MAX 4
/* Room for one request: the longest template with 4 of the longest
 * {coap_uri} (1034 bytes), the headers and the largest payload. */
#define GE_HTTP_REQ_MAX 8192
/* NULL when t is a valid --http-path, else what is wrong with it. */
const char *ge_http_req_check(const char *t);
/* The request: METHOD target HTTP/1.1, Host, Content-Length (+ the
 * payload). pq is "path?query\npayload" as the plan's template key holds
 * it (after its method and owner); dev the device's endpoint. Returns its
 * length, 0 when it does not fit cap. */
size_t ge_http_req_format(char *out, size_t cap, const char *tmpl,
                          const char *host, const char *method,
                          const struct sockaddr_in6 *dev, const char *pq,
                          size_t pq_len);

#endif
