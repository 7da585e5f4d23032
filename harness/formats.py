"""The single Python definition of every format shared with the C programs.

docs/formats.md explains them; harness/tests/test_formats.py checks that the
C headers (gateway-emulator/ge_format.h, device/dev_format.h) say the same.
"""

from __future__ import annotations

TRACE_COLUMNS: tuple[str, ...] = ("device_id", "send_ts_us", "method", "uri")
TRACE_OPTIONAL_COLUMNS: tuple[str, ...] = ("payload",)
HOSTS_COLUMNS: tuple[str, ...] = ("host", "address")
RESOURCE_COLUMNS: tuple[str, ...] = ("path", "service_us")
RESOURCE_OPTIONAL_COLUMNS: tuple[str, ...] = ("payload_bytes",)
METHODS: tuple[str, ...] = ("GET", "PUT", "POST", "DELETE")

GE_OUTPUT_COLUMNS: tuple[str, ...] = (
    "device_id", "method", "uri", "intended_us", "sent_us", "recv_us",
    "response_us", "latency_intended_us", "send_lag_us", "status", "code",
    "retransmissions", "service_us",
)
GE_STATUSES: tuple[str, ...] = ("ok", "timeout", "error")

#: CoAP option (elective, experimental range) carrying the service time in us.
SERVICE_TIME_OPTION = 65000
DEFAULT_COAP_PORT = 5683
MAX_SERVICE_US = 1_000_000_000
MAX_PAYLOAD_BYTES = 1024
