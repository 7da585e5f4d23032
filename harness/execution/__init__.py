"""The execution layer (the run layer of docs/architecture.md, not named
`run`: that is the API function wotbench.run): one spec -> its tests, each a
sequence of phases (execution.phases) on an engine. Placement on cores
(placement), the GEs' scheduler (rtplan), how many GEs a test gets
(instances), the resource monitor (monitor) and the runner that drives it
all and guarantees clean-up (runner)."""
