"""Observations (RFC 7641) of a capture: OBS and UNOBS rows, notifications counted.

Fed the settled messages of :class:`wotbench.tracegen._pairs.Matcher` in
time order (requests, RSTs and responses carrying an Observe option):

* a GET with Observe 0 opens an observation (client, server, token): an
  ``OBS`` row; the same again while open is a re-registration (no row),
  and one of a (device, path?query) that another observation holds open is
  ``overlapping`` (no row: the trace holds one observation per pair);
* it is closed, an ``UNOBS`` row of the same (device, path?query), by a GET
  with Observe 1 and the same token (that request's row), by the client's
  RST to the last notification (message id), or at the end of the capture
  (at its last message's time);
* a response with an Observe option and the token of an open observation is
  a notification of it (never a request; the first is the registration's
  answer): the interval between two of them is a sample of the resource's
  event process, and their type (CON or NON) is counted.

Memory: the open observations and, per resource, its interval quantiles
(:class:`wotbench.tracegen._quantiles.Quantiles`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from wotbench.tracegen._quantiles import Quantiles

__all__ = ["MAX_OBSERVATIONS", "Observations", "Observation"]

#: The most observations a trace holds (docs/formats.md).
MAX_OBSERVATIONS = 262144
_MIN_RIT_US, _MAX_RIT_US = 100, 10**12
_RST, _CON = 3, 0


@dataclass
class Observation:
    device: int
    uri: str
    resource: int           # resources key (device << 32 | path id)
    last_t: int
    last_mid: int = -1
    started: int = 0
    answered: bool = False  # the registration's answer came (the notifications after it are events)


@dataclass
class Observations:
    """The observations of a capture, as its messages come in time order."""

    open: dict[tuple[int, int, int, int], Observation] = field(default_factory=dict)
    opened: int = 0
    reregistrations: int = 0
    overlapping: int = 0
    over_limit: int = 0
    closed: dict[str, int] = field(default_factory=lambda: {"deregister": 0, "rst": 0, "capture_end": 0})
    notifications: int = 0
    notifications_unmatched: int = 0
    intervals: Quantiles = field(default_factory=Quantiles)
    types: dict[int, list[int]] = field(default_factory=dict)       # resource -> [notifications, CON]
    spans: dict[int, int] = field(default_factory=dict)             # resource -> longest observation
    _pairs: set[tuple[int, str]] = field(default_factory=set)
    _by_mid: dict[tuple[int, int, int], tuple[int, int, int, int]] = field(default_factory=dict)

    def register(self, key: tuple[int, int, int, int], t: int, device: int, uri: str, resource: int) -> bool:
        """A GET with Observe 0; True when it is an OBS row."""
        if key in self.open:
            self.reregistrations += 1
            return False
        if (device, uri) in self._pairs:
            self.overlapping += 1
            return False
        if self.opened >= MAX_OBSERVATIONS:
            self.over_limit += 1
            return False
        self.open[key] = Observation(device, uri, resource, t, started=t)
        self._pairs.add((device, uri))
        self.opened += 1
        self.types.setdefault(resource, [0, 0])
        return True

    def deregister(self, key: tuple[int, int, int, int], t: int) -> Observation | None:
        """A GET with Observe 1: the observation it closes (its row is UNOBS), or None."""
        return self._close(key, t, "deregister")

    def rst(self, client: int, server: int, mid: int, t: int) -> Observation | None:
        """A client's RST: the observation whose last notification it rejects, or None."""
        key = self._by_mid.get((client, server, mid))
        return None if key is None else self._close(key, t, "rst")

    def notification(self, key: tuple[int, int, int, int], t: int, mid: int, mtype: int) -> None:
        obs = self.open.get(key)
        if obs is None:
            self.notifications_unmatched += 1
            return
        self.notifications += 1
        if obs.answered:
            self.intervals.add_one(obs.resource, t - obs.last_t)
            counts = self.types[obs.resource]
            counts[0] += 1
            counts[1] += mtype == _CON
        obs.answered = True
        client, server = key[0], key[1]
        self._by_mid.pop((client, server, obs.last_mid), None)
        self._by_mid[(client, server, mid)] = key
        obs.last_t, obs.last_mid = t, mid

    def end(self, t: int) -> list[Observation]:
        """The end of the capture: the observations still open, in the order opened."""
        left = sorted(self.open.items(), key=lambda kv: kv[1].started)
        return [o for o in (self._close(k, t, "capture_end") for k, _ in left) if o is not None]

    def _close(self, key: tuple[int, int, int, int], t: int, why: str) -> Observation | None:
        obs = self.open.pop(key, None)
        if obs is None:
            return None
        self._pairs.discard((obs.device, obs.uri))
        self._by_mid.pop((key[0], key[1], obs.last_mid), None)
        self.closed[why] += 1
        self.spans[obs.resource] = max(self.spans.get(obs.resource, 0), t - obs.started)
        return obs

    def columns(self, resource: int) -> str | None:
        """The observe cells of a resource's row (observe_rit, notify_type,
        max_age, observe_seed), None when it was never observed. observe_rit
        is ``det:`` the median of its notification intervals (without any,
        its longest observation); notify_type ``con``, ``non`` or ``non:N``
        from the share of CON notifications; max_age and observe_seed empty
        (the device's defaults: the capture does not keep them)."""
        counts = self.types.get(resource)
        if counts is None:
            return None
        if self.intervals.has(resource):
            rit = round(self.intervals.median(resource))
        else:
            rit = self.spans.get(resource, 0)
        rit = min(max(rit, _MIN_RIT_US), _MAX_RIT_US)
        n, con = counts
        kind = "non" if con == 0 else "con" if con == n else f"non:{min(max(int(n / con + 0.5), 1), 1000)}"
        return f"det:{rit},{kind},,"

    def summary(self) -> dict[str, object]:
        return {"observations": self.opened, "reregistrations": self.reregistrations,
                "overlapping": self.overlapping, "over_limit": self.over_limit, "closed_by": dict(self.closed),
                "notifications": self.notifications, "notifications_unmatched": self.notifications_unmatched,
                "resources": len(self.types)}
