"""Simulated InfiniBand/RoCE fabric traffic with ground truth (`ibwire gen`).

    from ibwire.gen import scenario, simulate
    result = simulate(scenario("rc_loss", seed=3))
    result.write("rc_loss.pcap")             # + rc_loss.truth.json

`simulate` runs an event-driven model of two hosts on one link (RC requester and
responder state machines, UD, MADs, link-level credits, seeded faults) and keeps
every packet; `bulk_write` streams millions of templated packets straight to a
file for load tests.
"""

from ibwire.gen.config import SCENARIOS, GenConfig, scenario
from ibwire.gen.sim import GenResult, simulate, truth_path

__all__ = ["SCENARIOS", "GenConfig", "GenResult", "scenario", "simulate", "truth_path"]
