"""The Arrow core on Ray Data: a callable class for actor pools, and ``preprocess``.

::

    import ray, mm_framework as mmf
    from mm_framework.ray import preprocess

    ds = ray.data.read_parquet("s3://bucket/requests/")   # id, images, input_ids
    preprocess(ds, mmf.preset("qwen2_vl"), pixels="u8").write_parquet("s3://bucket/features/")

Every node needs ``mm-framework[ray]`` and the family's plugin distribution installed
(a ``runtime_env`` pip list does it); an actor without the plugin fails naming the
family and the node. The traps this module steers around are in docs/batch.md, "Ray".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

try:
    import pyarrow as pa
    import ray
    import ray.data
except ImportError as e:  # pragma: no cover - depends on the environment
    raise ImportError("mm_framework.ray needs ray[data] and pyarrow: pip install 'mm-framework[ray]'") from e

from . import par, plugins
from .arrow import process_table
from .arrow.schema import check_pixels
from .errors import SpecError
from .family import parse_spec
from .limits import Limits
from .media.policy import FetchPolicy
from .pipeline import Pipeline, pipeline_from_spec

DEFAULT_BATCH_SIZE = 16


def _assigned_cpus() -> float | None:
    """The CPUs Ray reserved for this actor (None outside an actor). Inside an actor
    ``os.cpu_count()`` is the host's core count, so it cannot size the thread pool."""
    context = ray.get_runtime_context() if ray.is_initialized() else None
    if context is None or context.get_actor_id() is None:
        return None
    return float(context.get_assigned_resources().get("CPU", 0.0))


def _pipeline(spec: Any, limits: Limits | None, fetch_policy: FetchPolicy | None) -> Pipeline:
    family = parse_spec(spec)["family"]
    if family not in plugins.families():
        where = ray.util.get_node_ip_address() if ray.is_initialized() else "this process"
        raise SpecError(
            f"family {family!r} is not installed on the Ray node {where}: install its plugin distribution on every "
            f"node (installed families: {sorted(plugins.families()) or 'none'})"
        )
    return pipeline_from_spec(spec, limits=limits, fetch_policy=fetch_policy)


class Preprocessor:
    """``ds.map_batches(Preprocessor, fn_constructor_kwargs={"spec": spec}, batch_format="pyarrow",
    compute=ray.data.ActorPoolStrategy(size=N))``: each actor builds one pipeline and runs
    :func:`~mm_framework.arrow.process_table` on its batches, its ``par`` threads sized
    from the CPUs Ray assigned it (``num_cpus=`` of ``map_batches``)."""

    def __init__(
        self,
        spec: Mapping[str, Any] | str,
        *,
        pixels: str = "f32",
        limits: Limits | None = None,
        fetch_policy: FetchPolicy | None = None,
    ) -> None:
        self.pixels = check_pixels(pixels)
        cpus = _assigned_cpus()
        if cpus is not None:
            par.set_threads(par.threads_for_cpus(cpus))
        self.pipeline = _pipeline(spec, limits, fetch_policy)

    def __call__(self, batch: pa.Table) -> pa.Table:
        return process_table(self.pipeline, batch, pixels=self.pixels)


def preprocess(
    ds: ray.data.Dataset,
    spec: Mapping[str, Any] | str,
    *,
    pixels: str = "f32",
    actors: int | None = None,
    cpus_per_actor: float = 1.0,
    batch_size: int = DEFAULT_BATCH_SIZE,
    limits: Limits | None = None,
    fetch_policy: FetchPolicy | None = None,
) -> ray.data.Dataset:
    """``ds`` (rows of ``images`` and ``input_ids`` or ``text``, other columns passed
    through) preprocessed on an actor pool; lazy, like every Ray Data transform.

    ``actors`` defaults to the cluster's CPUs minus one, over ``cpus_per_actor``: an
    actor pool holding every CPU starves the read tasks feeding it and the job hangs
    without an error (Ray issue 44687).
    """
    check_pixels(pixels)
    parse_spec(spec)
    if actors is None:
        cpus = float(ray.cluster_resources().get("CPU", 1.0))
        actors = max(1, int((cpus - 1) / cpus_per_actor))
    kwargs = {"spec": spec, "pixels": pixels, "limits": limits, "fetch_policy": fetch_policy}
    return ds.map_batches(
        Preprocessor,
        fn_constructor_kwargs=kwargs,
        batch_format="pyarrow",
        batch_size=batch_size,
        compute=ray.data.ActorPoolStrategy(size=actors),
        num_cpus=cpus_per_actor,
    )
