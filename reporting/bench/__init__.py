"""`make bench-report`: the report's cost on synthetic runs (bench_report,
bench_engines) and the synthetic run folders they and the tests use (synth).
Not imported by the reporting package itself."""
