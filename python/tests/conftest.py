"""Shared fixtures of the Python tests: seeded random matrices of awkward sizes (printed, overridable with
BCSR24_TEST_SEED), and the GPU/library markers that skip visibly when a device or package is missing."""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import bcsr24

SEED = int(os.environ.get("BCSR24_TEST_SEED", "20240536"))
# JAX takes 75% of the GPU's memory at its first use unless told otherwise; the other libraries share the device.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


def pytest_report_header(config):
    info = bcsr24.device_info()
    gpu = f"{info['name']} (sm_{info['compute_capability']})" if info["available"] else f"none ({info['reason']})"
    return [f"bcsr24 {bcsr24.__version__} from {os.path.dirname(bcsr24.__file__)}", f"bcsr24 GPU: {gpu}",
            f"bcsr24 test seed: {SEED} (BCSR24_TEST_SEED overrides)"]


@pytest.fixture
def rng(request):
    # One generator per test, derived from the seed and the test's name so that tests do not share a stream.
    return np.random.default_rng([SEED, sum(map(ord, request.node.name))])


def random_sparse(rng, rows, cols, density, dtype=np.float64):
    """Random values in +-[0.5, 2) (so no row spans more than fp16's range) on a random pattern, CSR."""
    a = sp.random(rows, cols, density=density, format="csr", dtype=np.float64, random_state=rng)
    a.data = rng.choice([-1.0, 1.0], size=a.nnz) * rng.uniform(0.5, 2.0, size=a.nnz)
    return a.astype(dtype)


def laplacian_2d(nx, ny):
    """The 5-point Laplacian of an nx x ny grid: SPD, integers (exact in fp16)."""
    ex = sp.diags([-np.ones(nx - 1), 2 * np.ones(nx), -np.ones(nx - 1)], [-1, 0, 1])
    ey = sp.diags([-np.ones(ny - 1), 2 * np.ones(ny), -np.ones(ny - 1)], [-1, 0, 1])
    return (sp.kron(sp.identity(ny), ex) + sp.kron(ey, sp.identity(nx))).tocsr()


def has_gpu():
    return bcsr24.device_info()["available"]


def gpu_reason():
    info = bcsr24.device_info()
    return f"no usable CUDA device: {info['reason']}"
