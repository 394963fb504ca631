# A job_config.py in TorchTitan v0.2.0's form, for scripts/torchtitan-keys.py.
from dataclasses import dataclass, field
from typing import Literal

import torch  # never imported by the script


@dataclass
class Job:
    print_config: bool = False
    """A docstring."""
    description: str | None = None

    def helper(self) -> int:
        return 1


@dataclass
class Float8Linear:
    filter_fqns: list[str] = field(default_factory=list)


@dataclass
class MXLinear:
    filter_fqns: list[str] = field(default_factory=lambda: ["output"])
    recipe_name: Literal["mxfp8"] = "mxfp8"


@dataclass
class QuantizedLinear:
    float8: Float8Linear = field(default_factory=Float8Linear)
    mx: MXLinear = field(default_factory=MXLinear)


@dataclass
class Quantize:
    linear: QuantizedLinear = field(default_factory=QuantizedLinear)


@dataclass
class JobConfig:
    job: Job = field(default_factory=Job)
    quantize: Quantize = field(default_factory=Quantize)
