/* The formats wotbench-ge shares with Python, one definition each
 * (docs/formats.md; mirrored by harness/base/formats.py; checked by
 * harness/tests/test_formats.py). */
#ifndef GE_FORMAT_H
#define GE_FORMAT_H

#define GE_TRACE_COLUMNS "device_id,send_ts_us,method,uri"
#define GE_TRACE_OPTIONAL_COLUMNS "payload"
#define GE_HOSTS_COLUMNS "host,address"
#define GE_OUTPUT_COLUMNS                                                      \
  "device_id,method,uri,intended_us,sent_us,recv_us,response_us,"              \
  "latency_intended_us,send_lag_us,status,code,retransmissions,service_us"
#define GE_STATUSES "ok,timeout,error"
/* Summary counters of the sent stamps: the kernel's, or user-space ones
 * (README.md, "Kernel send stamps"); they sum to the requests sent. */
#define GE_TX_STAMP_COUNTERS "tx_stamps_kernel,tx_stamps_fallback"
/* --rto-out: one row per event of a CON exchange. */
#define GE_RTO_COLUMNS                                                         \
  "row,device_id,peer,event,tx,t_us,timer_us,rto_us,rtt_us,kind,used"
#define GE_RTO_EVENTS "send,sample,timeout,dup"
#define GE_RTO_KINDS "strong,weak,none"
#define GE_METHODS "GET,PUT,POST,DELETE"
/* GET with Observe 0 (register) and 1 (deregister), RFC 7641. */
#define GE_OBSERVE_METHODS "OBS,UNOBS"
/* --notify-out: one row per notification received (Observe, RFC 7641). */
#define GE_NOTIFY_COLUMNS                                                      \
  "obs,reg_row,device_id,seq,n,event_us,dev_sent_us,recv_us,latency_us,"       \
  "age_us,type,status,gap"
#define GE_NOTIFY_STATUSES                                                     \
  "registered,fresh,reregistered,reordered,duplicate,after_cancel"

/* Elective, experimental-range option carrying the service time in us. */
#define GE_SERVICE_TIME_OPTION 65000
/* On the answer to an UNOBS: the last Observe seq the device sent. */
#define GE_OBS_LAST_SEQ_OPTION 65001
#define GE_DEFAULT_COAP_PORT 5683
#define GE_MAX_PAYLOAD_BYTES 1024
#define GE_MAX_PATH_BYTES 255
#define GE_MAX_DEVICE_ID 2147483647ULL
#define GE_MAX_SEND_TS_US 9007199254740992ULL /* 2^53 */
#define GE_SUMMARY_FORMAT 1

#endif
