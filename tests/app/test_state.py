"""The state objects alone, without a widget: defaults from the schema, one signal per field,
validation by the schema, bad values from a file dropped and never fatal."""

from __future__ import annotations

from dataclasses import asdict

import pytest

from gradviz.app.state import CurrentResult, MemorySettings, RunSettings
from gradviz.schema.errors import SettingsError
from gradviz.schema.session import Session, load_session, save_session
from gradviz.schema.settings import (
    RUN_TIMEOUT_S,
    TOLERANCE_FIELDS,
    CheckSettings,
    MemoryOptions,
    dtype_defaults,
)


class Recorder:
    """Every <field>_changed signal of a state, in the order they came."""

    def __init__(self, state) -> None:
        self.seen: list[tuple[str, object]] = []
        for name in state.FIELDS:
            getattr(state, f"{name}_changed").connect(lambda value, name=name: self.seen.append((name, value)))


def test_run_settings_defaults_are_check_settings_defaults():
    settings = RunSettings()
    defaults = CheckSettings()
    assert {name: settings.get(name) for name in RunSettings.FIELDS if name != "timeout"} == {
        name: getattr(defaults, name) for name in RunSettings.FIELDS if name != "timeout"
    }
    assert settings.timeout == RUN_TIMEOUT_S
    assert settings.check_settings() == defaults


@pytest.mark.parametrize(
    ("name", "value"),
    [("device", "cuda"), ("dtype", "float32"), ("eps", 1e-4), ("atol", 0.0), ("rtol", 0.5), ("seed", 7), ("timeout", 0)],
)
def test_each_run_setting_has_its_own_signal(name, value):
    settings = RunSettings()
    seen = Recorder(settings).seen
    setattr(settings, name, value)
    # a new dtype brings its own eps, atol and rtol (each with its signal), as in the CLI
    follows = [(t, getattr(dtype_defaults(value), t)) for t in TOLERANCE_FIELDS] if name == "dtype" else []
    assert seen == [(name, value), *follows]
    assert settings.get(name) == value and settings.to_dict()[name] == value
    setattr(settings, name, value)  # the same value again: no signal
    assert seen == [(name, value), *follows]


def test_check_settings_is_a_copy_with_every_run_setting():
    settings = RunSettings()
    settings.update({"device": "cuda", "eps": 1e-3, "seed": 2**64 - 1})
    copy = settings.check_settings()
    assert (copy.device, copy.eps, copy.seed) == ("cuda", 1e-3, 2**64 - 1)
    copy.eps = 5.0
    assert settings.eps == 1e-3


def test_a_whole_number_for_a_float_setting_is_stored_as_a_float():
    settings = RunSettings()
    settings.eps = 1
    assert settings.eps == 1.0 and isinstance(settings.eps, float)


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("eps", 0.0, "eps must be positive"),
        ("eps", float("nan"), "finite"),
        ("atol", -1.0, "atol must be >= 0"),
        ("dtype", "int8", "Unsupported dtype"),  # float16 and bfloat16 are checked dtypes; int8 is not
        ("device", "", "device must be a name"),
        ("seed", 2**64, "out of range"),
        ("seed", 1.5, "whole number"),
        ("timeout", -1, "timeout must be a whole number"),
        ("timeout", True, "timeout must be a whole number"),
        ("colour", "red", "not a setting here"),
    ],
)
def test_a_bad_value_raises_and_changes_nothing(name, value, words):
    settings = RunSettings()
    before = settings.to_dict()
    seen = Recorder(settings).seen
    with pytest.raises(SettingsError, match=words):
        settings.set(name, value)
    assert settings.to_dict() == before and seen == []


def test_update_keeps_the_good_values_and_says_why_each_bad_one_was_dropped():
    settings = RunSettings()
    dropped = settings.update({"eps": -1.0, "atol": 1e-3, "dtype": "int8", "timeout": 30, "jacobian_only": True})
    assert settings.atol == 1e-3 and settings.timeout == 30
    assert settings.eps == CheckSettings().eps and settings.dtype == CheckSettings().dtype
    assert len(dropped) == 3
    assert "eps must be positive" in dropped[0] and "int8" in dropped[1] and "jacobian_only" in dropped[2]


def test_update_from_text_parses_what_qsettings_gives_back():
    settings = RunSettings()
    dropped = settings.update(
        {"eps": "1e-05", "seed": "12", "timeout": "60", "device": "cpu", "rtol": "lots"}, from_text=True
    )
    assert (settings.eps, settings.seed, settings.timeout) == (1e-5, 12, 60)
    assert dropped == ["rtol must be a number, not 'lots'."]
    assert settings.rtol == CheckSettings().rtol


def test_run_settings_survive_a_session_file(tmp_path):
    settings = RunSettings()
    settings.update({"dtype": "float32", "eps": 1e-4, "seed": 2**40, "timeout": 0})
    path = tmp_path / "s.gradviz"
    save_session(path, Session(code="", run=settings.to_dict()))
    again = RunSettings()
    assert again.update(load_session(path).run) == []
    assert again.to_dict() == settings.to_dict()
    assert list(settings.to_dict()) == list(RunSettings.FIELDS)


def test_memory_settings_defaults_are_memory_options_defaults():
    options = MemorySettings()
    assert options.options() == MemoryOptions()
    assert options.to_dict() == MemoryOptions().to_dict()  # shape as a list, ready for JSON


def test_each_memory_option_has_its_own_signal():
    options = MemorySettings()
    seen = Recorder(options).seen
    options.layers = 5
    options.shape = [2, 1, 40, 36]  # a list from JSON is kept as the schema's tuple
    options.dtype = "float64"
    assert seen == [("layers", 5), ("shape", (2, 1, 40, 36)), ("dtype", "float64")]
    options.shape = (2, 1, 40, 36)
    assert len(seen) == 3
    assert options.to_dict()["shape"] == [2, 1, 40, 36]


def test_memory_options_from_a_session_are_validated_one_by_one():
    options = MemorySettings()
    dropped = options.update({"layers": 0, "shape": [1, 2, 3], "kernel": 5, "out_channels": "16", "colour": 1})
    assert options.kernel == 5
    assert asdict(options.options()) | {"kernel": 3} == asdict(MemoryOptions())
    assert len(dropped) == 4
    assert "layers must be a positive whole number" in dropped[0] and "N, C, H, W" in dropped[1]


def test_current_result_says_which_request_it_answers(make_check_result):
    current = CurrentResult()
    changes = []
    current.changed.connect(lambda: changes.append(current.request))
    assert current.result is None and current.request == 0
    result = make_check_result("linear")
    current.set(result, request=3, graph={"nodes": []}, displays={0: "prepared"})
    assert changes == [3]
    assert current.result is result and current.graph == {"nodes": []} and current.graph_error is None
    assert current.displays == {0: "prepared"}
