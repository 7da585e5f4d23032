"""Studies: what runs many tests to answer one question. The capacity search
(capacity_search), the contention detector against ground truth
(validate_cd), what spreading a run over a swarm costs and gains
(swarmbench; the swarm lab itself is wotbench.engine.swarmlab) and the
harness's own bring-up bench (harness_bench)."""
