"""Scoring on a Ray cluster: the files of a single-process run, computed by a pool of Ray actors.

A team scoring 100k-1M samples outgrows one machine; Ray Data's `map_batches` over stateful actors is the
established way to run batch inference on a cluster, so localeval does not write a distribution layer of
its own. The driver validates the input, Ray Data hands chunks of samples to the actors (each loads the
judge and embedder once), and the rows come back to the driver, which writes them in input order through
the same `scoring.write_results` as a single-process run.

- `ray_runner.py`: the driver (connect or start Ray, check every node, stream, reorder, write);
- `actors.py`: what runs on the cluster (the scoring actor, the input feeder, the cache sink);
- `cache_flow.py`: the judge cache across the cluster (a snapshot out, every new entry back).

ray is imported only inside these modules' functions, when a run asks for it (`pip install localeval[ray]`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import OptionError


@dataclass(frozen=True)
class RayOptions:
    """--ray [ADDRESS], --ray-actors, --ray-cpus-per-actor, --ray-gpus-per-actor."""

    address: str | None = None  # None: start a local Ray instance for this run, and stop it afterwards
    actors: int | None = None  # None: as many as the cluster's nodes can hold
    cpus_per_actor: float = 1.0
    gpus_per_actor: float = 0.0

    def check(self, gpu_layers: int | None) -> None:
        """Settings that cannot work, refused before Ray starts; `gpu_layers` None: no actor runs a GGUF judge."""
        if self.actors is not None and self.actors < 1:
            raise OptionError(f"--ray-actors {self.actors}: give at least 1")
        if self.cpus_per_actor <= 0:
            raise OptionError(f"--ray-cpus-per-actor {self.cpus_per_actor:g}: must be more than 0")
        if self.gpus_per_actor < 0:
            raise OptionError(f"--ray-gpus-per-actor {self.gpus_per_actor:g}: must be 0 or more")
        if self.gpus_per_actor > 0 and not gpu_layers:
            fix = ("add --gpu-layers -1 to offload it" if gpu_layers == 0
                   else "no metric of this run loads a judge on the actors")
            raise OptionError(f"--ray-gpus-per-actor {self.gpus_per_actor:g} reserves GPUs the judge would not use: {fix}")
        if self.gpus_per_actor == 0 and gpu_layers:
            # Ray hides every GPU from an actor that reserves none: the judge would run on the CPU with the
            # GPU's batching, and $LOCALEVAL_GPU_LAYERS on the driver would do this without a flag in sight.
            raise OptionError(f"--gpu-layers {gpu_layers} (or LOCALEVAL_GPU_LAYERS) offloads the judge, but Ray shows "
                              "no GPU to an actor that reserves none: add --ray-gpus-per-actor (e.g. 1, or 0.5 for "
                              "two actors a GPU), or --gpu-layers 0 for CPU actors")

    def threads(self, requested: int | None) -> int:
        """llama.cpp threads in each actor: --threads if given, else the actor's whole CPUs (at least 1)."""
        return requested or max(1, int(self.cpus_per_actor))


__all__ = ["RayOptions"]
