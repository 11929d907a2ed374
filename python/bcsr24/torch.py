"""PyTorch integration: an autograd-aware product with a fixed A, and a Tensor standing for A that torch.lobpcg
(and torch.matmul) accept.

    y = bcsr24.torch.matmul(op, x)                 # dy/dx recorded: x.grad = A^T @ grad_y
    A = bcsr24.torch.as_tensor(op)                 # a (m, k) float32 tensor whose only data operation is A @ X
    w, v = torch.lobpcg(A, k=16, X=X0, largest=False)

A is a constant: no gradient flows to it. The backward product uses ``op.T`` (``op`` itself when the stored matrix
is symmetric, checked once; else an operator built once from A's stored values transposed).
"""

import torch

from ._operator import SparseOperator

__all__ = ["matmul", "as_tensor", "OperatorTensor"]


class _Product(torch.autograd.Function):
    """y = A @ b with A fixed; grad_b = A^T @ grad_y, in b's dtype."""

    @staticmethod
    def forward(ctx, b, op):
        ctx.op = op
        ctx.b_dtype = b.dtype
        return op.matmul(b)  # grad mode is off inside forward: a plain product

    @staticmethod
    def backward(ctx, grad_y):
        if not ctx.needs_input_grad[0]:
            return None, None
        grad_b = ctx.op.T.matmul(grad_y.to(torch.float32))
        return grad_b.to(ctx.b_dtype), None


def matmul(op, b):
    """``op @ b`` for a torch tensor b (on a GPU, or on the CPU through the reference path), recorded for autograd
    when b requires grad."""
    if not isinstance(op, SparseOperator):
        raise TypeError(f"op: expected a bcsr24.SparseOperator, got {type(op).__name__}")
    if not isinstance(b, torch.Tensor):
        raise TypeError(f"b: expected a torch.Tensor, got {type(b).__name__}")
    if b.requires_grad and torch.is_grad_enabled():
        return _Product.apply(b, op)
    return op.matmul(b)


_MATMULS = {torch.matmul, torch.mm, torch.Tensor.matmul, torch.Tensor.mm, torch.Tensor.__matmul__}
# Reading the tensor's metadata (shape, dtype, device, layout, ...) is all torch.lobpcg does with A besides A @ X.
_METADATA = {torch.Tensor.size, torch.Tensor.dim, torch.Tensor.ndimension, torch.Tensor.__len__,
             torch.Tensor.get_device}


class OperatorTensor(torch.Tensor):
    """A float32 tensor of A's shape standing for a :class:`bcsr24.SparseOperator` in torch code that multiplies
    by A: ``A @ X``, ``torch.matmul(A, X)``, ``torch.mm(A, X)`` and ``torch.lobpcg(A, ...)`` run bcsr24's product
    (autograd-aware for X). Its metadata (shape, dtype, device, layout) reads as usual; every other operation
    raises TypeError, because the tensor holds no values (it is backed by one broadcast zero), so nothing can
    silently compute with a wrong A.
    """

    @staticmethod
    def __new__(cls, op, device=None):
        if device is None:
            device = torch.device("cuda", torch.cuda.current_device()) if torch.cuda.is_available() else "cpu"
        t = torch.zeros((), dtype=torch.float32, device=device).expand(op.shape).as_subclass(cls)
        t.operator = op
        return t

    def __init__(self, op, device=None):
        pass

    def __repr__(self):
        return f"OperatorTensor({self.operator!r}, device={torch.Tensor.device.__get__(self)})"

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in _MATMULS:
            a, b = args[0], args[1]
            if isinstance(a, OperatorTensor) and not isinstance(b, OperatorTensor) and not kwargs:
                return matmul(a.operator, b)
            raise TypeError("an OperatorTensor multiplies from the left only (A @ X with X a dense tensor)")
        if func is torch.lobpcg:
            from torch._lobpcg import _lobpcg

            # torch.lobpcg hands over to the subclass; its body (_lobpcg) then calls torch.matmul(A, X), which
            # comes back here. A is constant, so the autograd wrapper torch.lobpcg would add for a differentiable
            # A is not needed.
            return _lobpcg(*args, **kwargs)
        if func in _METADATA or getattr(func, "__name__", "") == "__get__":
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        name = getattr(func, "__qualname__", None) or getattr(func, "__name__", repr(func))
        raise TypeError(f"OperatorTensor supports A @ X, torch.matmul, torch.mm and torch.lobpcg only, not {name}")


def as_tensor(op, device=None):
    """An :class:`OperatorTensor` for ``op`` on ``device`` (default: the current CUDA device, or the CPU)."""
    if not isinstance(op, SparseOperator):
        raise TypeError(f"op: expected a bcsr24.SparseOperator, got {type(op).__name__}")
    return OperatorTensor(op, device)
