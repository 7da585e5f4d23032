"""tracegen: the synthetic workload generator (paper section 4.2).

Public API (imported lazily, so that ``wotbench --help`` does not load NumPy)::

    from wotbench.tracegen import generate, parse_workload, WorkloadSpec
    spec = parse_workload(src.data, src)          # src: wotbench._yamlsrc.YamlSource
    out = generate(spec, Path("results/x/workload"))

See tracegen/README.md for the files written and how resources are chosen.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "generate", "GeneratedWorkload", "build_requests", "device_host",
    "WorkloadSpec", "GroupWorkload", "Distribution", "parse_workload", "parse_duration",
    "parse_distribution", "spec_from_file",
]

_WHERE = {
    "generate": "_generate", "GeneratedWorkload": "_generate", "build_requests": "_generate",
    "device_host": "_generate",
    "WorkloadSpec": "_spec", "GroupWorkload": "_spec", "Distribution": "_spec",
    "parse_workload": "_spec", "parse_duration": "_spec", "parse_distribution": "_spec",
    "spec_from_file": "_spec",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"wotbench.tracegen.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'wotbench.tracegen' has no attribute {name!r}")
