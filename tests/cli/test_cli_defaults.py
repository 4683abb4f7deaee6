"""The CLI's defaults are the settings types' own: ``gradviz memory`` measures what the window does."""

from __future__ import annotations

from dataclasses import fields

from gradviz.cli.main import build_parser
from gradviz.cli.memory import add_memory_parser
from gradviz.schema.settings import MemoryOptions


def test_memory_defaults_are_memory_options_defaults():
    args = build_parser().parse_args(["memory"])
    options = MemoryOptions()
    assert args.layers == options.layers
    assert tuple(int(v) for v in args.shape.split(",")) == options.shape
    assert (args.out_channels, args.kernel, args.device, args.dtype) == (
        options.out_channels, options.kernel, options.device, options.dtype
    )
    assert {f.name for f in fields(MemoryOptions)} <= {*vars(args), "out_channels"}


def test_the_help_says_the_layers_default():
    import argparse

    commands = argparse.ArgumentParser().add_subparsers()
    add_memory_parser(commands)
    text = commands.choices["memory"].format_help()
    assert f"(default: {MemoryOptions().layers})" in " ".join(text.split())
