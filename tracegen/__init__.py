"""tracegen: the synthetic workload generator (paper section 4.2).

Public API (imported lazily, so that ``wotbench --help`` does not load NumPy)::

    from wotbench.tracegen import generate, parse_workload, WorkloadSpec
    spec = parse_workload(src.data, src)          # src: wotbench.yamlsrc.YamlSource
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
    "generate": "generate", "GeneratedWorkload": "generate", "build_requests": "generate",
    "device_host": "generate",
    "WorkloadSpec": "spec", "GroupWorkload": "spec", "Distribution": "spec",
    "parse_workload": "spec", "parse_duration": "spec", "parse_distribution": "spec",
    "spec_from_file": "spec",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(f"wotbench.tracegen.{_WHERE[name]}"), name)
    raise AttributeError(f"module 'wotbench.tracegen' has no attribute {name!r}")
