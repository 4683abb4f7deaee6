"""Where the tests find things: the repository root and the folders under it, defined once.

Test modules (and the scripts they start with ``PYTHONPATH=ROOT``) import these instead of
counting ``Path(__file__).parents[N]`` for themselves.
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout: gradviz/, tests/, pyproject.toml
TESTS = ROOT / "tests"
CORPUS = TESTS / "corpus"  # the misbehaving user files every transport is tried against
ARTIFACTS = ROOT / "test-artifacts"  # screenshots and exports tests leave for a person to look at
