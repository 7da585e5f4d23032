"""The base layer: what every other layer may use and that uses nothing of
wotbench. The one error type for bad input (errors), values with units
(units), the formats shared with the C programs (formats), the run folder as
a contract (rundir) and its atomic result I/O (results), the guards of every
path read (inputfile) or written (outpath), the version and lazy exports."""
