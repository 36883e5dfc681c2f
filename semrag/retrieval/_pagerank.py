"""Personalized PageRank: the power iteration over a whole graph and the local forward push."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from semrag.types import Ints

if TYPE_CHECKING:
    import scipy.sparse as sp


def personalized_pagerank(
    transition: sp.csr_matrix,
    seeds: npt.NDArray[np.float64],
    damping: float,
    *,
    tol: float = 1e-6,
    max_iter: int = 200,
) -> npt.NDArray[np.float64]:
    """Personalized PageRank by power iteration.

    Args:
        transition: a sparse column-stochastic matrix ``T`` (``T[i, j]`` = probability of
            stepping from ``j`` to ``i``); columns of nodes without edges may be zero.
        seeds: the personalization (restart) distribution, non-negative, summing to 1.
        damping: probability of following an edge at each step (the rest restarts).
        tol: stop when the L1 change of one step falls below this.
        max_iter: stop after this many steps.

    Returns:
        The stationary scores; mass lost at nodes without edges restarts at the seeds, so
        they sum to 1.

    Examples:
        >>> import scipy.sparse as sp
        >>> t = sp.csc_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
        >>> personalized_pagerank(t, np.array([1.0, 0.0]), 0.5).round(3).tolist()
        [0.667, 0.333]
    """
    p = seeds.copy()
    for _ in range(max_iter):
        step = damping * (transition @ p)
        nxt = step + (1.0 - step.sum()) * seeds
        if np.abs(nxt - p).sum() < tol:
            return nxt
        p = nxt
    return p


def local_pagerank(
    transition: sp.csr_matrix,
    degree: npt.NDArray[np.float64],
    seeds: npt.NDArray[np.float64],
    damping: float,
    *,
    epsilon: float = 1e-5,
) -> npt.NDArray[np.float64]:
    """Personalized PageRank by forward push (Andersen, Chung and Lang, 2006): local work.

    The walk of :func:`personalized_pagerank` on an undirected graph, computed only where
    its mass is: each round settles the restart share of every node whose residual is at
    least ``epsilon`` times its degree and pushes the rest to its neighbours (a node
    without edges sends it back to the seeds). Its cost grows with the edges of the nodes
    the walk reaches, not with the graph.

    Every estimate is a lower bound of the exact score. On a graph where every node has
    an edge it is short by at most ``epsilon * degree[v]`` at node ``v`` (the graph is
    undirected); a node without edges keeps at most ``epsilon``. The unsettled mass is
    what the scores lack of summing to 1.

    Args:
        transition: the column-stochastic matrix ``A @ diag(1 / degree)`` of a symmetric
            weighted adjacency ``A`` (scipy CSR, as :func:`personalized_pagerank` takes).
        degree: the weighted degree of each node (``A``'s column sums; 0 without edges).
        seeds: the restart distribution, non-negative, summing to 1.
        damping: probability of following an edge at each step.
        epsilon: the residual, per unit of degree, left unsettled at any node.

    Returns:
        The estimated scores.

    Examples:
        >>> import scipy.sparse as sp
        >>> t = sp.csr_matrix(np.array([[0.0, 1.0], [1.0, 0.0]]))
        >>> s = local_pagerank(t, np.ones(2), np.array([1.0, 0.0]), 0.5, epsilon=1e-9)
        >>> s.round(3).tolist()
        [0.667, 0.333]
    """
    ptr, cols, vals = transition.indptr, transition.indices, transition.data
    n = seeds.size
    seeds = np.asarray(seeds, dtype=np.float64)
    restart = np.flatnonzero(seeds)  # where a node without edges sends its mass
    settled, residual = np.zeros(n), np.zeros(n)
    residual[restart] = seeds[restart]
    everywhere: npt.NDArray[np.float64] | None = None  # every node's threshold, once needed
    # scratch: position of a node among a round's targets (read only where written)
    position = np.empty(n, np.int64)

    def threshold(d: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
        return epsilon * np.where(d > 0, d, 1.0)  # a node without edges: epsilon

    def above(nodes: Ints) -> Ints:
        return nodes[residual[nodes] > threshold(degree[nodes])]

    active = above(restart)
    while active.size:
        mass = residual[active]
        residual[active] = 0.0
        settled[active] += mass
        # A is symmetric, so column u of T is row u of T rescaled: A[u, v] = T[u, v] * deg(v)
        d = degree[active]
        counts = np.where(d > 0, ptr[active + 1] - ptr[active], 0)
        total = int(counts.sum())
        # Only a node that receives mass can turn active (the others stay below their
        # threshold). A round that reaches few nodes adds up their mass alone; one that
        # reaches many makes a pass over every node, which is then cheaper than sorting.
        reached: Ints | None = np.zeros(0, np.int64)
        if total:
            ends = np.cumsum(counts)
            at = np.arange(total) + np.repeat(ptr[active] - (ends - counts), counts)
            to = cols[at]
            share = damping * mass / np.where(counts > 0, d, 1.0)
            weights = vals[at] * degree[to] * np.repeat(share, counts)
            if 8 * total < n:
                # the distinct targets, sorted, and each target's slot among them: what
                # np.unique(to, return_inverse=True) gives, without sorting every target
                order = np.arange(total)
                position[to] = order
                reached = np.sort(to[position[to] == order])
                position[reached] = np.arange(reached.size)
                slot = position[to]
                residual[reached] += np.bincount(slot, weights=weights, minlength=reached.size)
            else:
                residual += np.bincount(to, weights=weights, minlength=n)
                reached = None
        lost = mass[counts == 0].sum()
        if lost > 0:
            residual[restart] += damping * lost * seeds[restart]
            if reached is not None:
                reached = np.union1d(reached, restart)
        if reached is None:
            if everywhere is None:
                everywhere = threshold(degree)
            active = np.flatnonzero(residual > everywhere)
        else:
            active = above(reached)
    return (1.0 - damping) * settled
