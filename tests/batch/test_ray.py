"""mm_framework.ray on a local Ray instance (2 CPUs, no dashboard, 256 MiB object store).

The Ray work runs in a process of its own (``ray_job.py``) under a timeout, so a hang
fails this test instead of stalling the suite; on a timeout every process of that
session (the driver, the raylet and its workers) is killed. Ray's memory monitor is off:
it kills workers when *another* process fills the machine.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.data")
pytest.importorskip("pyarrow")

from .batch_cases import family_case  # noqa: E402

TIMEOUT_S = 240


def _session_pids(sid: int) -> list[int]:
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getsid(int(entry)) == sid:
                    pids.append(int(entry))
            except OSError:
                pass
    return pids


def test_preprocess_on_a_local_ray_instance(tmp_path):
    family_case("qwen_vl")
    env = {
        **os.environ, "RAY_memory_monitor_refresh_ms": "0", "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0",
    }
    job = Path(__file__).with_name("ray_job.py")
    proc = subprocess.Popen(
        [sys.executable, str(job), str(tmp_path)], env=env, start_new_session=True,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        stdout, stderr = proc.communicate(timeout=TIMEOUT_S)
    except subprocess.TimeoutExpired:
        for pid in _session_pids(proc.pid):
            os.kill(pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"the Ray job did not finish in {TIMEOUT_S} s")
    assert proc.returncode == 0, stderr[-4000:]
    result = json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert result["preprocess_equal"], result
    assert result["errors"] == [None] * 6 + ["MediaError", None]
    assert result["write_parquet_equal"] and result["write_parquet_metadata"], result
    # Sized from the CPUs Ray assigned, not the host's cores.
    assert result["threads_with_2_cpus"] == 1 and result["threads_with_1_cpus"] == "inline"
    assert "family 'no_such_family' is not installed on the Ray node" in result["refusal"]
