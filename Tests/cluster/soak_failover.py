"""soak_failover.py - `make soak-failover` (not part of `make test`): the
failover figures of a cluster. Three nats-servers and three nodes on
loopback, as test_cluster.py; each nats-server in turn is killed -9 under
writes and restarted, ROUNDS times over (default 3: 9 kills). Prints,
for each kill, when writes were acknowledged again after the kill and
after JetStream's own election of new leaders, then the worst and the
median; exits 1 if a kill took longer than test_cluster.py allows.

    HEARTH_BIN=.build/debug/hearth ROUNDS=5 python3 Tests/cluster/soak_failover.py
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(__file__))
import test_cluster as t  # noqa: E402
from cluster import Cluster  # noqa: E402


def main():
    rounds = int(os.environ.get("ROUNDS", "3"))
    c = Cluster()
    rows = []
    try:
        c.start()
        for r in range(rounds):
            for s in range(3):
                gap, elected, _ = t.kill_nats_under_writes(c, s, "r%ds%d" % (r, s))
                after = (None if elected == float("inf")
                         else max(0.0, gap - elected))
                late = gap > max(t.NATS_FAILOVER_S,
                                 elected + t.AFTER_JETSTREAM_S)
                rows.append((gap, after, late))
                print("kill -9 of s%d: writes back %.1f s after it, %s%s"
                      % (s, gap, "JetStream never led again" if after is None
                         else "%.1f s after JetStream's election" % after,
                         "  TOO LATE" if late else ""), flush=True)
    finally:
        c.stop()
    gaps = [g for g, _, _ in rows]
    afters = [a for _, a, _ in rows if a is not None]
    print("%d kills: after the kill median %.1f s, worst %.1f s; after the "
          "election median %.1f s, worst %.1f s; %d too late"
          % (len(rows), statistics.median(gaps), max(gaps),
             statistics.median(afters) if afters else float("nan"),
             max(afters) if afters else float("nan"),
             sum(1 for _, _, late in rows if late)))
    sys.exit(1 if any(late for _, _, late in rows) else 0)


if __name__ == "__main__":
    main()
