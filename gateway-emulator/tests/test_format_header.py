"""ge_format.h says what harness/formats.py says."""

from __future__ import annotations

import re

from gehelpers import ROOT

from wotbench import formats

HEADER = (ROOT / "gateway-emulator" / "ge_format.h").read_text()


def define(name: str) -> str:
    """The value of a #define, with continuation lines and C string
    concatenation resolved."""
    m = re.search(rf"^#define {name}\b((?:.*\\\n)*.*)$", HEADER, re.M)
    assert m, name
    body = m.group(1).replace("\\\n", " ")
    body = re.sub(r"/\*.*?\*/", "", body).strip()
    strings = re.findall(r'"([^"]*)"', body)
    return "".join(strings) if strings else body


def test_columns_and_constants_match():
    assert tuple(define("GE_OUTPUT_COLUMNS").split(",")) == formats.GE_OUTPUT_COLUMNS
    assert tuple(define("GE_TRACE_COLUMNS").split(",")) == formats.TRACE_COLUMNS
    assert tuple(define("GE_TRACE_OPTIONAL_COLUMNS").split(",")) == formats.TRACE_OPTIONAL_COLUMNS
    assert tuple(define("GE_HOSTS_COLUMNS").split(",")) == formats.HOSTS_COLUMNS
    assert tuple(define("GE_STATUSES").split(",")) == formats.GE_STATUSES
    assert tuple(define("GE_METHODS").split(",")) == formats.METHODS
    assert int(define("GE_SERVICE_TIME_OPTION")) == formats.SERVICE_TIME_OPTION
    assert int(define("GE_DEFAULT_COAP_PORT")) == formats.DEFAULT_COAP_PORT
    assert int(define("GE_MAX_PAYLOAD_BYTES")) == formats.MAX_PAYLOAD_BYTES
