"""A refusal said in two layers is said in the same words: each sentence is one named constant."""

from __future__ import annotations

import pytest
import torch

from gradviz.api.files import ExistingFiles, existing_files
from gradviz.core.check import check_function
from gradviz.core.loader import TargetError, load_inputs_file
from gradviz.schema.errors import SettingsError
from gradviz.schema.report import ALREADY_HOLDS, ExistingArrays, save_blocks
from gradviz.schema.targets import CANNOT_USE_INPUTS, check_inputs_path
from tests.core.why_functions import Tanh, random_inputs


def test_both_saves_refuse_to_replace_a_file_in_the_same_words(tmp_path):
    result = check_function(Tanh, random_inputs((2,)))
    (tmp_path / "numerical_o0_i0.npy").write_bytes(b"\x93NUMPY")
    with pytest.raises(ExistingArrays) as arrays:
        save_blocks(result, tmp_path)
    with pytest.raises(ExistingFiles) as files:
        existing_files(tmp_path, ["numerical_o0_i0.npy"], "overwrite=True")
    said = ALREADY_HOLDS.format(directory=tmp_path, files="numerical_o0_i0.npy", how="{how}")
    assert str(arrays.value) == said.format(how="--overwrite")
    assert str(files.value) == said.format(how="overwrite=True")
    assert (tmp_path / "numerical_o0_i0.npy").read_bytes() == b"\x93NUMPY"  # nothing was written


def test_an_inputs_file_is_refused_in_the_same_words_before_and_at_loading(tmp_path):
    """The CLI checks the path before it starts; the worker loads the file: both open alike."""
    with pytest.raises(SettingsError) as before:
        check_inputs_path(tmp_path)  # a folder
    saved = tmp_path / "inputs.pt"
    torch.save({"x": torch.ones(2)}, saved)
    with pytest.raises(TargetError) as loading:
        load_inputs_file(saved)
    opening = CANNOT_USE_INPUTS.split("{why}")[0]
    assert before.value.message.startswith(opening.format(path=tmp_path))
    assert loading.value.message.startswith(opening.format(path=saved))
