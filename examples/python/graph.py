"""The normalized Laplacian I - D^-1/2 W D^-1/2 of a random graph with a power-law degree tail: the matrix spectral
clustering and partitioning take their smallest eigenvectors from. Every vertex links to `base` random others (so no
vertex is isolated and the graph is connected with high probability); `extra` more edges per vertex join endpoints
drawn with weights (i + 1)^(-1 / (gamma - 1)), which gives hubs of degree ~ n^(1 / (gamma - 1)). Eigenvalues lie in
[0, 2]; 0 is simple for a connected graph (eigenvector D^1/2 1)."""

import numpy as np


def normalized_laplacian(n, base=3, extra=2.0, gamma=2.5, seed=0):
    """The n x n normalized graph Laplacian as a scipy.sparse CSR matrix (float64, sorted indices, diagonal 1)."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    src = [np.repeat(np.arange(n), base)]
    dst = [rng.integers(0, n, size=n * base)]
    m = int(extra * n)
    weights = (np.arange(n) + 1.0) ** (-1.0 / (gamma - 1.0))
    weights /= weights.sum()
    perm = rng.permutation(n)  # hubs spread over the numbering, as in a crawled graph
    src.append(perm[rng.choice(n, size=m, p=weights)])
    dst.append(perm[rng.choice(n, size=m, p=weights)])
    i = np.concatenate(src)
    j = np.concatenate(dst)
    keep = i != j
    i, j = i[keep], j[keep]
    w = sp.coo_matrix((np.ones(2 * i.size), (np.concatenate([i, j]), np.concatenate([j, i]))), shape=(n, n)).tocsr()
    w.data[:] = 1.0  # duplicate edges count once
    degree = np.asarray(w.sum(axis=1)).ravel()
    scale = sp.diags(1.0 / np.sqrt(degree))
    lap = (sp.identity(n, format="csr") - scale @ w @ scale).tocsr()
    lap.sum_duplicates()
    lap.sort_indices()
    return lap
