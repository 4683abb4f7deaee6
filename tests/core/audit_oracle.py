"""The audit's oracle, independent of gradviz: each custom call of a forward recorded by wrapping
the Functions' ``apply`` and the op where the model looks them up, then
``torch.autograd.gradcheck`` on each call at those inputs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import torch

from resources.functions.fused_conv_bn import FusedConvBN2DFunction
from tests.core import audit_models

FUNCTIONS = [
    audit_models.LeakyCapFn,
    audit_models.BadLeakyCapFn,
    audit_models.RMSNormFn,
    audit_models.BadRMSNormFn,
    audit_models.AttentionFn,
    audit_models.SoftplusFn,
    audit_models.BadSoftplusFn,
    FusedConvBN2DFunction,
]


@dataclass
class OracleCall:
    name: str
    fn: Any  # what gradcheck calls
    args: tuple

    @property
    def differentiated(self) -> bool:
        return any(isinstance(a, torch.Tensor) and a.requires_grad for a in self.args)

    def gradcheck(self, **options: Any) -> bool:
        return torch.autograd.gradcheck(self.fn, self.args, raise_exception=False, **options)


def _copies(args: tuple) -> tuple:
    grad = torch.is_grad_enabled()
    return tuple(
        a.detach().clone().requires_grad_(a.requires_grad and grad) if isinstance(a, torch.Tensor) else a for a in args
    )


def record_calls(model: Any, *inputs: Any) -> list[OracleCall]:
    """Every custom call of one forward of ``model``, in call order."""
    calls: list[OracleCall] = []
    with pytest.MonkeyPatch.context() as patch:
        originals = {cls: cls.apply for cls in FUNCTIONS}  # bound before any is patched
        for cls, apply in originals.items():

            def recording(*args, _cls=cls, _apply=apply):
                calls.append(OracleCall(_cls.__name__, _apply, _copies(args)))
                return _apply(*args)

            patch.setattr(cls, "apply", recording)
        op = audit_models.matmul

        def recording_op(*args):
            calls.append(OracleCall("gvaudit::matmul", op, _copies(args)))
            return op(*args)

        patch.setattr(audit_models, "matmul", recording_op)
        model(*inputs)
    return calls
