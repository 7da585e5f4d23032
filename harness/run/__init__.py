"""The run layer: one spec -> its tests, each a sequence of phases
(run.phases) on an engine. Placement on cores (placement), how many GEs a
test gets (instances), the resource monitor (monitor) and the runner that
drives it all and guarantees clean-up (runner)."""
