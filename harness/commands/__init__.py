"""The `wotbench` command line: main (argparse, one subcommand per function)
and one module per command family (*_cmd). The only layer that prints for a
person and exits with a status."""
