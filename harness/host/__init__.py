"""The host below the containers: what a run needs of this machine itself and
measures of it, without the Docker engine. Core claims between runs
(coreclaim), keeping containers off the host (hostguard), real-time
scheduling (rt), ARP priming and the neighbour table (prime, neigh), the
harness's own memory (selfmon) and one GE's calibrated capacity on this
host (gecap, measured on loopback: loopback)."""
