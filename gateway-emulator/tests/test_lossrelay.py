"""The loss relay's script (lossrelay.Ledger) on hand-made datagrams, no
sockets and no clock: which transmissions and answers it drops, how it
numbers requests, what it records and what it lets through untouched."""

from __future__ import annotations

from lossrelay import Ledger, LossScript, header


def dgram(typ: int, code: int, mid: int, token: bytes = b"\x01\x02") -> bytes:
    return bytes([0x40 | typ << 4 | len(token), code]) + mid.to_bytes(2, "big") + token


CON, NON, ACK, RST = 0, 1, 2, 3
GET, CONTENT = 0x01, 0x45


def test_header_reads_type_code_mid_and_refuses_other_versions() -> None:
    assert header(dgram(ACK, CONTENT, 0xBEEF)) == (ACK, CONTENT, 0xBEEF)
    assert header(b"\x80\x01\x00\x01") is None  # version 2
    assert header(b"\x40\x01\x00") is None      # short


def test_requests_are_numbered_by_first_arrival_and_dropped_by_script() -> None:
    led = Ledger(LossScript(requests={1: 2}))
    mids = [700, 65535, 3]  # any MIDs, in the order the client first sends them
    assert led.from_client(dgram(CON, GET, mids[0]), 10)
    assert [led.from_client(dgram(CON, GET, mids[1]), t) for t in (20, 30, 40)] == [False, False, True]
    assert led.from_client(dgram(NON, GET, mids[2]), 50)
    assert led.from_client(dgram(CON, GET, mids[0]), 60)  # a retransmission of request 0
    assert led.order == {700: 0, 65535: 1, 3: 2}
    assert led.seen == {0: [10, 60], 1: [20, 30, 40], 2: [50]}
    assert led.delivered == {0: 2, 1: 1, 2: 1}


def test_answers_are_matched_by_mid_and_dropped_by_script() -> None:
    led = Ledger(LossScript(requests={}, responses={0: 1}))
    assert led.from_client(dgram(CON, GET, 9), 1)
    assert not led.from_device(dgram(ACK, CONTENT, 9), 5)
    assert led.from_device(dgram(ACK, CONTENT, 9), 8)
    assert led.answers == {0: [5, 8]}


def test_other_datagrams_pass_unrecorded() -> None:
    led = Ledger(LossScript(requests={0: 5}, responses={0: 5}))
    assert led.from_client(dgram(ACK, 0, 1), 1)            # empty ACK of a separate response
    assert led.from_client(dgram(CON, 0, 2), 2)            # ping
    assert led.from_client(b"not coap", 3)
    assert led.from_device(dgram(ACK, CONTENT, 4), 4)      # MID the client never sent
    assert led.from_device(dgram(CON, CONTENT, 5), 5)      # separate response, new MID
    assert led.from_device(dgram(RST, 0, 6), 6)
    assert led.order == {} and led.seen == {} and led.answers == {}
