"""Studies: what runs many tests to answer one question. The capacity search
(capacity_search), the contention detector against ground truth
(validate_cd), the swarm lab and its bench (swarmlab, swarmbench) and the
harness's own bring-up bench (harness_bench)."""
