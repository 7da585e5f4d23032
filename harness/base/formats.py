"""The single Python definition of every format shared with the C programs.

docs/formats.md explains them; harness/tests/test_formats.py checks that this
module, that document and the C headers (gateway-emulator/ge_format.h,
device/dev_format.h, device/counters.h) say the same.
"""

from __future__ import annotations

TRACE_COLUMNS: tuple[str, ...] = ("device_id", "send_ts_us", "method", "uri")
TRACE_OPTIONAL_COLUMNS: tuple[str, ...] = ("payload",)
HOSTS_COLUMNS: tuple[str, ...] = ("host", "address")
RESOURCE_COLUMNS: tuple[str, ...] = ("path", "service_us")
RESOURCE_OPTIONAL_COLUMNS: tuple[str, ...] = ("payload_bytes",)
#: Optional resource columns of an observable resource (RFC 7641); empty cells: not observable.
RESOURCE_OBSERVE_COLUMNS: tuple[str, ...] = ("observe_rit", "notify_type", "max_age", "observe_seed")
METHODS: tuple[str, ...] = ("GET", "PUT", "POST", "DELETE")
#: Trace methods of an observation (RFC 7641): GET with Observe 0 (register) and
#: GET with Observe 1 (deregister), same device and uri (docs/formats.md).
OBSERVE_METHODS: tuple[str, ...] = ("OBS", "UNOBS")

GE_OUTPUT_COLUMNS: tuple[str, ...] = (
    "device_id", "method", "uri", "intended_us", "sent_us", "recv_us",
    "response_us", "latency_intended_us", "send_lag_us", "status", "code",
    "retransmissions", "service_us",
)
GE_STATUSES: tuple[str, ...] = ("ok", "timeout", "error")
#: Top-level counters of the GE summary JSON: first transmissions whose sent
#: stamp is the kernel's software TX stamp, and those that kept the stamp the
#: GE took before `sendmsg` (docs/formats.md, "GE summary JSON").
GE_TX_STAMP_COUNTERS: tuple[str, ...] = ("tx_stamps_kernel", "tx_stamps_fallback")

#: `wotbench-ge --rto-out FILE`: one row per event of a CON exchange
#: (docs/formats.md, "GE RTO log CSV"); `event` is one of GE_RTO_EVENTS,
#: `kind` (sample rows) one of GE_RTO_KINDS.
GE_RTO_COLUMNS: tuple[str, ...] = (
    "row", "device_id", "peer", "event", "tx", "t_us", "timer_us", "rto_us",
    "rtt_us", "kind", "used",
)
GE_RTO_EVENTS: tuple[str, ...] = ("send", "sample", "timeout", "dup")
GE_RTO_KINDS: tuple[str, ...] = ("strong", "weak", "none")
#: `wotbench-ge --notify-out FILE`: one row per notification received (RFC 7641).
NOTIFY_COLUMNS: tuple[str, ...] = (
    "obs", "reg_row", "device_id", "seq", "n", "event_us", "dev_sent_us", "recv_us",
    "latency_us", "age_us", "type", "status", "gap",
)
NOTIFY_STATUSES: tuple[str, ...] = (
    "registered", "fresh", "reregistered", "reordered", "duplicate", "after_cancel",
)
#: Counters of the GE summary's `observe` object, in order (then `latency_us`, `age_us`).
GE_OBSERVE_COUNTERS: tuple[str, ...] = (
    "observations", "registered", "refused", "reregistrations", "rereg_answered",
    "cancelled", "dropped_by_device", "notifications", "fresh", "reordered", "duplicates",
    "after_cancel", "stale", "unstamped", "seq_resets", "lost", "tail_unknown",
    "con_notifications", "acks_sent", "rsts_sent", "rows_dropped",
)

#: Keys of `wotbench-device --stats FILE` that are not counters, in file
#: order, before the counters: the format version and "cpus", the CPU
#: affinity the device ran with as a string in the CPU list syntax of
#: `--cpus LIST` ("0-1,3").
DEVICE_STATS_FIELDS: tuple[str, ...] = ("format", "cpus")

#: Counters of `wotbench-device --stats FILE`, in file order, after
#: DEVICE_STATS_FIELDS.
#: "overflow" counts the requests answered 5.03 because the queue was full.
DEVICE_STATS_COUNTERS: tuple[str, ...] = (
    "datagrams", "requests", "served", "ok", "inline_zero", "not_found",
    "bad_method", "bad_option", "overflow", "wkc", "duplicates", "dup_replies",
    "garbage", "ignored", "pings", "dropped", "send_errors", "dedup_evictions", "dedup_slots",
    "separate", "retransmits", "sep_acked", "sep_reset", "sep_gave_up",
    "sep_untracked",
    # RFC 7641 observations (docs/formats.md, "Device stats JSON")
    "obs_registered", "obs_reregistered", "obs_refused", "obs_table_full",
    "obs_cancelled", "obs_reset", "obs_gave_up", "obs_active",
    "notify_events", "notify_sent", "notify_con", "notify_retransmits",
    "notify_acked", "notify_superseded", "notify_refresh",
)

#: Time histograms of `wotbench-device --stats FILE`, in file order, after
#: the counters (not on the stderr counts line): each an object
#: {"buckets": [[lo, hi, count], ...], "overflow": n, "sum": us, "max": us}
#: whose counts sum to "served" (docs/formats.md, "Device stats JSON"),
#: but for "notify_lag_us".
#: "residence_us": a request's receipt to its response's send;
#: "queue_wait_us": receipt to a worker's pick-up (0 for inline answers);
#: "notify_lag_us": an event's scheduled time to the send of its
#: notification, for the events notified at once (RFC 7641 observations).
DEVICE_STATS_HISTOGRAMS: tuple[str, ...] = ("residence_us", "queue_wait_us", "notify_lag_us")

#: CoAP option (elective, experimental range) carrying the service time in us.
SERVICE_TIME_OPTION = 65000
#: CoAP option on the answer to an UNOBS (RFC 7641 deregistration): the last
#: Observe seq the device sent to that observation.
LAST_SEQ_OPTION = 65001
DEFAULT_COAP_PORT = 5683
MAX_SERVICE_US = 1_000_000_000
MAX_PAYLOAD_BYTES = 1024
MAX_PATH_BYTES = 255
MAX_DEVICE_ID = 2**31 - 1
MAX_SEND_TS_US = 2**53
GE_SUMMARY_FORMAT = 1
DEVICE_STATS_FORMAT = 1
