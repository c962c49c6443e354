"""tools/rc_sweep.py: the accuracy sweep of the RC engine (issue #13). Its draws must
be reproducible from (master, index) and stay inside the parameter space the
property test samples, or sweep numbers from two sessions could not be compared."""

from __future__ import annotations

import json

from rc_helpers import sweep_tool

rc_sweep = sweep_tool()


def test_draws_are_reproducible_and_inside_the_space():
    draws = [rc_sweep.draw_params(359, i) for i in range(50)]
    assert draws == [rc_sweep.draw_params(359, i) for i in range(50)]
    assert len({seed for seed, _ in draws}) > 45
    for _, kw in draws:
        assert kw.pop("messages") == 20
        assert set(kw) == set(rc_sweep.SPACE)
        assert all(v in rc_sweep.SPACE[k] for k, v in kw.items())
        assert kw["reorder"] > 0
    assert rc_sweep.draw_params(359, 0) != rc_sweep.draw_params(361, 0)


def test_params_prints_the_draw(capsys):
    assert rc_sweep.main(["params", "359", "3"]) == 0
    out = json.loads(capsys.readouterr().out)
    seed, kw = rc_sweep.draw_params(359, 3)
    assert out.pop("seed") == seed and out.pop("name") == "rc_clean"
    assert out == json.loads(json.dumps(kw))


def test_scenario_sweep_reports_exact_captures(capsys):
    assert rc_sweep.main(["scenario", "rc_loss", "--seeds", "5", "--jobs", "1"]) == 0
    assert capsys.readouterr().out.splitlines()[-1].startswith(
        "wrong 0 frames 0 episodes ")


def test_extended_draws_are_reproducible_and_valid_generator_settings():
    from ibwire.gen.config import scenario

    draws = [rc_sweep.extended_params(1, i) for i in range(200)]
    assert draws == [rc_sweep.extended_params(1, i) for i in range(200)]
    assert draws[77][0] == 48029        # the draw tests/test_rc_long_delays.py pins
    for seed, kw in draws:
        cfg = scenario("rc_clean", seed=seed, **kw)     # (validates every knob)
        assert not (cfg.pfc and cfg.native) and (cfg.fmt != "erf" or cfg.native)
        assert all(v in rc_sweep.EXTENDED[k] for k, v in kw.items() if k != "drain_gbps")
    for k, values in rc_sweep.EXTENDED.items():     # every value is drawn somewhere
        assert {repr(v) for v in values} <= {repr(kw[k]) for _, kw in draws}
