"""Hard SPD test problems for the solver examples, built with NumPy/SciPy: cell-centred finite volumes for
-div(k grad u) = f on the unit square or cube (5- or 7-point stencil, Dirichlet boundary), face coefficients by
harmonic means, with k a log-normal random field (k = exp(sigma g), g a Gaussian field smoothed over a few cells).
The matrix is an irreducibly diagonally dominant M-matrix (SPD) whose condition number grows with sigma and the
grid: the class of the circuit and reservoir matrices users solve. (The C++ testkit's generator,
bcsr24_testkit/diffusion.hpp, builds the same class with its own random field.)

Also a clamped linear elasticity problem assembled by scikit-fem (P1 tetrahedra), when scikit-fem is installed:
the matrix exactly as that library assembles it.
"""

import numpy as np
import scipy.sparse as sp


def lognormal_field(shape, sigma=2.5, correlation=4, seed=1):
    """exp(sigma g): g white noise smoothed by three box filters of half width `correlation` per axis, scaled to
    mean 0 and standard deviation 1."""
    from scipy.ndimage import uniform_filter

    g = np.random.default_rng(seed).standard_normal(shape)
    for _ in range(3):
        g = uniform_filter(g, size=2 * correlation + 1, mode="nearest")
    g = (g - g.mean()) / max(g.std(), 1e-300)
    return np.exp(sigma * g)


def diffusion_matrix(shape, sigma=2.5, correlation=4, seed=1):
    """The finite-volume matrix on a grid of `shape` cells (2 or 3 axes; the last axis varies fastest)."""
    k = lognormal_field(shape, sigma, correlation, seed)
    n = k.size
    index = np.arange(n).reshape(shape)
    rows, cols, vals = [], [], []
    diag = np.zeros(shape)
    for axis, cells in enumerate(shape):
        weight = float(cells) ** 2  # 1 / h^2 on the unit interval
        lo = [slice(None)] * len(shape)
        hi = [slice(None)] * len(shape)
        lo[axis] = slice(0, cells - 1)
        hi[axis] = slice(1, cells)
        lo, hi = tuple(lo), tuple(hi)
        c = weight * 2.0 / (1.0 / k[lo] + 1.0 / k[hi])  # harmonic mean on the interior faces
        i, j = index[lo].ravel(), index[hi].ravel()
        rows += [i, j]
        cols += [j, i]
        vals += [-c.ravel(), -c.ravel()]
        diag[lo] += c
        diag[hi] += c
        first = [slice(None)] * len(shape)
        last = [slice(None)] * len(shape)
        first[axis] = 0
        last[axis] = cells - 1
        diag[tuple(first)] += 2.0 * weight * k[tuple(first)]  # Dirichlet faces: half a cell to the boundary
        diag[tuple(last)] += 2.0 * weight * k[tuple(last)]
    rows.append(index.ravel())
    cols.append(index.ravel())
    vals.append(diag.ravel())
    a = sp.csr_matrix((np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    a.sort_indices()
    return a


def skfem_elasticity(cells=8):
    """Clamped linear elasticity on the unit cube with P1 tetrahedra, assembled by scikit-fem: the stiffness matrix
    with the clamped face's degrees of freedom condensed out, as scikit-fem's `condense` leaves it (symmetric to
    rounding only). Raises ImportError without scikit-fem."""
    import skfem
    from skfem.models.elasticity import lame_parameters, linear_elasticity

    mesh = skfem.MeshTet.init_tensor(*(np.linspace(0.0, 1.0, cells + 1),) * 3)
    basis = skfem.Basis(mesh, skfem.ElementVector(skfem.ElementTetP1()))
    k = skfem.asm(linear_elasticity(*lame_parameters(1e3, 0.3)), basis)
    fixed = basis.get_dofs(lambda x: np.isclose(x[0], 0.0)).all()
    free = np.setdiff1d(np.arange(basis.N), fixed)
    return k[free][:, free].tocsr()
