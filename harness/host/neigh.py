"""The kernel's ARP (neighbour) table against a run's size.

Linux keeps one IPv4 neighbour table for every network namespace of the
host, and its ``gc_thresh3`` (1024 by default) caps the entries of all of
them together; past ``gc_thresh2`` (512) a forced garbage collection runs
on every new entry. A run of N nodes on internal bridges needs about 4N:
each node's address in the GE's namespace and in the host's (the readiness
probe), and the GE's and the host's address in each node's. Measured here
with 1,000 devices at the default thresholds (/proc/net/stat/arp_cache):
89,204 ``table_fulls``, and 1,173 of 7,416 requests timed out because the
GE's datagrams to 357 devices were never sent on (their counters saw only
the readiness probe); send lag spiked to milliseconds in the forced
collections. So a run raises the thresholds when the table is too small
for it (recorded in manifest.json ``startup.host_changes``) and leaves them
raised: a larger table harms nothing, and putting it back could break a
concurrent run that relies on it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wotbench.base.errors import UserError

#: Where the IPv4 neighbour table's thresholds live (the init namespace's).
NEIGH_DIR = Path("/proc/sys/net/ipv4/neigh/default")
#: Entries per node (see the module docstring) and a margin for the rest of the host.
PER_NODE = 4
MARGIN = 512


def needed(nodes: int) -> int:
    """Neighbour entries a run of ``nodes`` containers needs at most."""
    return PER_NODE * nodes + MARGIN


@dataclass(frozen=True)
class NeighChange:
    """The thresholds before the run and those it set."""

    before: tuple[int, int]        # gc_thresh2, gc_thresh3
    after: tuple[int, int]

    def as_dict(self) -> dict[str, object]:
        return {"sysctl": "net.ipv4.neigh.default.gc_thresh2/3", "before": list(self.before),
                "after": list(self.after), "why": "the host-wide ARP table must hold ~4 entries per node"}


def _read(name: str, root: Path) -> int:
    return int((root / name).read_text().split()[0])


def ensure(nodes: int, root: Path = NEIGH_DIR) -> NeighChange | None:
    """Raises gc_thresh2/3 so that ``needed(nodes)`` entries fit below
    gc_thresh2; None when they already do or the host has no such files.
    Raises UserError (nothing of the run started yet) when they are too
    small and cannot be written (not root, read-only /proc/sys)."""
    if not (root / "gc_thresh3").exists():
        return None
    want = needed(nodes)
    before = (_read("gc_thresh2", root), _read("gc_thresh3", root))
    if before[0] >= want:
        return None
    after = (want, max(before[1], 2 * want))
    try:
        (root / "gc_thresh3").write_text(f"{after[1]}\n")    # the cap first: thresh2 <= thresh3 always
        (root / "gc_thresh2").write_text(f"{after[0]}\n")
    except OSError as err:
        raise UserError(f"{nodes} containers need about {want} ARP entries but net.ipv4.neigh.default."
                        f"gc_thresh2/3 are {before[0]}/{before[1]} and cannot be raised ({err.strerror}): "
                        f"run `sysctl -w net.ipv4.neigh.default.gc_thresh3={2 * want} "
                        f"net.ipv4.neigh.default.gc_thresh2={want}` as root") from None
    return NeighChange(before, after)

