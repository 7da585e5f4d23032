"""device/dev_format.h says what wotbench.formats says (docs/formats.md)."""

from __future__ import annotations

import re
from pathlib import Path

from wotbench import formats

HEADER = Path(__file__).resolve().parents[1] / "dev_format.h"


def _defines() -> dict[str, str]:
    text = HEADER.read_text()
    return {m[1]: m[2].strip() for m in re.finditer(r"^#define DEV_(\w+)[ \t]+(.+?)\s*(?:/\*.*)?$",
                                                     text, re.M)}


def test_header_matches_python_formats():
    d = _defines()
    assert d["RESOURCE_COLUMNS"] == '"' + ",".join(formats.RESOURCE_COLUMNS) + '"'
    assert d["RESOURCE_OPTIONAL_COLUMNS"] == '"' + ",".join(formats.RESOURCE_OPTIONAL_COLUMNS) + '"'
    assert d["METHODS"] == '"' + ",".join(formats.METHODS) + '"'
    assert int(d["SERVICE_TIME_OPTION"]) == formats.SERVICE_TIME_OPTION
    assert int(d["DEFAULT_COAP_PORT"]) == formats.DEFAULT_COAP_PORT
    assert int(d["MAX_SERVICE_US"].rstrip("ULL")) == formats.MAX_SERVICE_US
    assert int(d["MAX_PAYLOAD_BYTES"]) == formats.MAX_PAYLOAD_BYTES
