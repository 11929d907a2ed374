"""The GPU dispatch of the Python layer without a GPU: arrays speaking __cuda_array_interface__ (as Numba's and
others do) are read, checked and handed to the C++ plan with the right pointer, leading dimension, stream and
output; the plan and the CUDA helpers of the extension are replaced by recorders. What this cannot check (the
kernels, the libraries' own arrays, real streams) test_gpu.py does on a GPU."""

import numpy as np
import pytest
import scipy.sparse as sp

import bcsr24
from bcsr24 import _arrays, _bcsr24

DEVICE = 0


class FakeDeviceArray:
    """A 'device' array: memory of a NumPy array described through __cuda_array_interface__ (v3)."""

    def __init__(self, host, stream=None):
        self.host = host
        self.stream = stream

    @property
    def __cuda_array_interface__(self):
        a = self.host
        return {"shape": a.shape, "typestr": a.dtype.str, "data": (a.__array_interface__["data"][0], False),
                "strides": a.strides, "version": 3, "stream": self.stream}


class Recorder:
    def __init__(self):
        self.calls = []


class FakePlanImpl:
    def __init__(self, rec, op, n, kernel, b_dtype, out_dtype, device, tuning, tuning_budget_ms):
        self.rec = rec
        rec.calls.append(("make_plan", n, kernel, b_dtype, out_dtype, device, tuning, tuning_budget_ms))
        self.report = {"kernel": kernel, "n": n, "reason": "fake"}
        self.workspace_bytes = 0

    def run(self, b, ldb, c, ldc, alpha, beta, stream):
        self.rec.calls.append(("run", b, ldb, c, ldc, alpha, beta, stream))

    def run_repeat(self, count, b, ldb, c, ldc, alpha, beta, stream):
        self.rec.calls.append(("run_repeat", count, b, ldb, c, ldc, alpha, beta, stream))


class FakeBuffer:
    def __init__(self, shape, dtype):
        self.host = np.zeros(shape, dtype=np.float32 if dtype == "float32" else np.float16)


@pytest.fixture
def fake_gpu(monkeypatch):
    rec = Recorder()
    monkeypatch.setattr(_bcsr24, "device_count", lambda: 1)
    monkeypatch.setattr(_bcsr24, "current_device", lambda: DEVICE)
    monkeypatch.setattr(_bcsr24, "pointer_device", lambda ptr: DEVICE)
    monkeypatch.setattr(_bcsr24, "make_plan", lambda *a: FakePlanImpl(rec, *a))

    def device_empty(shape, dtype, device):
        buf = FakeBuffer(tuple(shape), dtype)
        rec.calls.append(("device_empty", tuple(shape), dtype, device))
        return buf, buf.host.__array_interface__["data"][0]

    monkeypatch.setattr(_bcsr24, "device_empty", device_empty)
    monkeypatch.setattr(_bcsr24, "stream_synchronize", lambda s, d: rec.calls.append(("sync", s, d)))
    monkeypatch.setattr(_bcsr24, "stream_wait", lambda c, p, d: rec.calls.append(("wait", c, p, d)))
    return rec


def operator(rows=40, cols=30, precision="fp16"):
    a = sp.random(rows, cols, density=0.2, format="csr", random_state=3)
    return bcsr24.SparseOperator.from_scipy(a, precision=precision)


def ptr(a):
    return a.__array_interface__["data"][0]


def runs(rec):
    return [c for c in rec.calls if c[0] == "run"]


def test_cai_input_pointer_leading_dimension_stream(fake_gpu):
    op = operator()
    wide = np.zeros((30, 20), dtype=np.float32)
    b = wide[:, 4:12]  # 8 columns, leading dimension 20
    y = op @ FakeDeviceArray(b, stream=7)
    assert isinstance(y, FakeBuffer) and y.host.shape == (40, 8)
    (_, b_ptr, ldb, c_ptr, ldc, alpha, beta, stream), = runs(fake_gpu)
    assert (b_ptr, ldb, c_ptr, ldc, alpha, beta, stream) == (ptr(b), 20, ptr(y.host), 8, 1.0, 0.0, 7)
    assert ("make_plan", 8, "auto", "float32", "float32", DEVICE, "measure", 0.0) in fake_gpu.calls
    assert ("sync", 7, DEVICE) in fake_gpu.calls  # an unknown library gets a finished result
    # The plan is cached: a second product makes none.
    op @ FakeDeviceArray(b, stream=7)
    assert sum(c[0] == "make_plan" for c in fake_gpu.calls) == 1
    # Another stream is another plan (a plan's runs must not overlap on the device).
    op @ FakeDeviceArray(b, stream=9)
    assert sum(c[0] == "make_plan" for c in fake_gpu.calls) == 2


def test_vector_and_given_stream_waits_for_the_arrays(fake_gpu):
    op = operator()
    x = np.zeros((30, 3), dtype=np.float32)[:, 1]  # a strided vector: ldb = 3
    y = op.matmul(FakeDeviceArray(x, stream=5), stream=11, alpha=2.0)
    assert y.host.shape == (40,)
    (_, b_ptr, ldb, _, ldc, alpha, _, stream), = runs(fake_gpu)
    assert (b_ptr, ldb, ldc, alpha, stream) == (ptr(x), 3, 1, 2.0, 11)
    assert ("wait", 11, 5, DEVICE) in fake_gpu.calls


def test_out_in_place_with_beta(fake_gpu):
    op = operator()
    b = np.zeros((30, 8), dtype=np.float32)
    big = np.zeros((40, 12), dtype=np.float32)
    out = FakeDeviceArray(big[:, 2:10])
    r = op.matmul(FakeDeviceArray(b), out=out, alpha=0.5, beta=1.0)
    assert r is out
    (_, _, _, c_ptr, ldc, alpha, beta, _), = runs(fake_gpu)
    assert (c_ptr, ldc, alpha, beta) == (ptr(big[:, 2:10]), 12, 0.5, 1.0)
    assert not any(c[0] == "device_empty" for c in fake_gpu.calls)


def test_checks_before_the_plan_runs(fake_gpu):
    op = operator()
    b = FakeDeviceArray(np.zeros((30, 8), dtype=np.float32))
    with pytest.raises(TypeError, match="float64"):
        op @ FakeDeviceArray(np.zeros((30, 8)))
    with pytest.raises(ValueError, match="b has 29 rows"):
        op @ FakeDeviceArray(np.zeros((29, 8), dtype=np.float32))
    with pytest.raises(ValueError, match="columns are not adjacent"):
        op @ FakeDeviceArray(np.zeros((8, 30), dtype=np.float32).T)
    with pytest.raises(ValueError, match="beta"):
        op.matmul(b, beta=2.0)
    with pytest.raises(ValueError, match="out has shape"):
        op.matmul(b, out=FakeDeviceArray(np.zeros((40, 7), dtype=np.float32)))
    with pytest.raises(TypeError, match="float16 needs fp16 A and float16 B"):
        op.matmul(b, out=FakeDeviceArray(np.zeros((40, 8), dtype=np.float16)))
    with pytest.raises(ValueError, match="host array"):
        op.matmul(b, out=np.zeros((40, 8), dtype=np.float32))
    plan = op.plan(8, device=DEVICE)
    with pytest.raises(ValueError, match="plan was made for n = 8"):
        plan.run(FakeDeviceArray(np.zeros((30, 4), dtype=np.float32)))
    with pytest.raises(TypeError, match="plan takes float32"):
        plan.run(FakeDeviceArray(np.zeros((30, 8), dtype=np.float16)))
    other = op.plan(8, device=1)
    with pytest.raises(ValueError, match="device 0 but the plan .* device 1"):
        other.run(b)
    assert not runs(fake_gpu)


def test_plan_dtypes_and_run_repeat(fake_gpu):
    op = operator(precision="split")
    with pytest.raises(TypeError, match="split matrix multiplies float32"):
        op @ FakeDeviceArray(np.zeros((30, 8), dtype=np.float16))
    plan = op.plan(8, b_dtype="float32", device="cuda:0")
    assert plan.device == 0 and plan.report["reason"] == "fake"
    out = FakeDeviceArray(np.zeros((40, 8), dtype=np.float32))
    assert plan.run_repeat(1000, FakeDeviceArray(np.zeros((30, 8), dtype=np.float32)), out) is out
    assert [c for c in fake_gpu.calls if c[0] == "run_repeat"][0][1] == 1000


def test_plan_tuning_reaches_the_library(fake_gpu):
    op = operator()
    op.plan(8, device=DEVICE)
    op.plan(16, device=DEVICE, tuning="model")
    op.plan(4, kernel="split_pipelined", device=DEVICE, tuning="measure")
    op.plan(32, device=DEVICE, tuning_budget_ms=250)
    made = [c for c in fake_gpu.calls if c[0] == "make_plan"]
    assert made == [("make_plan", 8, "auto", "float32", "float32", DEVICE, "measure", 0.0),
                    ("make_plan", 16, "auto", "float32", "float32", DEVICE, "model", 0.0),
                    ("make_plan", 4, "split_pipelined", "float32", "float32", DEVICE, "measure", 0.0),
                    ("make_plan", 32, "auto", "float32", "float32", DEVICE, "measure", 250.0)]
    with pytest.raises(ValueError, match="tuning='fastest'"):
        op.plan(8, device=DEVICE, tuning="fastest")
    with pytest.raises(ValueError, match="tuning_budget_ms=-1"):
        op.plan(8, device=DEVICE, tuning_budget_ms=-1)
    with pytest.raises(ValueError, match="tuning_budget_ms=inf"):
        op.plan(8, device=DEVICE, tuning_budget_ms=float("inf"))
    with pytest.raises(TypeError, match="tuning_budget_ms='fast'"):
        op.plan(8, device=DEVICE, tuning_budget_ms="fast")
    with pytest.raises(ValueError, match="applies to tuning='measure'"):
        op.plan(8, device=DEVICE, tuning="model", tuning_budget_ms=100)
    assert len([c for c in fake_gpu.calls if c[0] == "make_plan"]) == 4  # refused before the library is called


def test_stream_handles():
    class CupyLike:
        ptr = 17

    class TorchLike:
        cuda_stream = 19

    class Protocol:
        def __cuda_stream__(self):
            return (0, 23)

    assert [_arrays.stream_handle(s) for s in (5, CupyLike(), TorchLike(), Protocol())] == [5, 17, 19, 23]
    with pytest.raises(TypeError, match="stream"):
        _arrays.stream_handle("fast")


def test_dtype_names():
    assert _arrays.dtype_name("fp16", "x") == "float16"
    assert _arrays.dtype_name(np.float32, "x") == "float32"
    assert _arrays.dtype_name("bf16", "x") == "bfloat16"
    assert _arrays.dtype_name("torch.bfloat16", "x") == "bfloat16"
    with pytest.raises(TypeError, match="unknown dtype"):
        _arrays.dtype_name("float7", "x")
