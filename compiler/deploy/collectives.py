"""Collectives as inference and training engines cost them (NCCL-style ring algorithms),
per device of the group, per direction. Pure arithmetic on exact numbers; no model names.

A collective moves, on its most loaded device, the larger of what it sends and what it
receives in each phase (a ring sends and receives the same amount at once, so a link
counts at its per-direction rate). For a tensor of S bytes over a group of n devices:

  all_reduce      ring reduce-scatter then all-gather: 2·(n−1)/n · S
  all_gather      (n−1)/n · S   (S the gathered tensor)
  reduce_scatter  (n−1)/n · S   (S the tensor before the scatter)
  all_to_all      the phase's bytes as the caller counts them (expert dispatch/combine)
  send            S             (a pipeline stage boundary, point to point)

When the group spans nodes (n > gpus_per_node devices, a devices of it per node, b = n/a
nodes) the collective is hierarchical, as NCCL's tree/ring over NVLink + the NIC does:
  all_reduce      reduce-scatter in the node (a), all-reduce across nodes of S/a (b), all-gather
                  in the node: scale-up 2·(a−1)/a · S, scale-out 2·(b−1)/b · S/a, three latencies;
  all_gather /    across nodes (b) of S/a, then in the node (a): scale-out (b−1)/b · S/a,
  reduce_scatter  scale-up (a−1)/a · S, two latencies;
  all_to_all      each destination's share over the link that reaches it (the caller says
                  what fraction of the phase leaves the node);
  send            over the scale-out link when the two stages are on different nodes.
Seconds = Σ latency + scale-up bytes / scale-up rate + scale-out bytes / scale-out rate.
The latency of a kind is the device file's (a cited measurement), or the query's latency=."""

from __future__ import annotations

from dataclasses import dataclass, field

import sympy as sp

from ...dsl.errors import SpecError

KINDS = ("all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send")


@dataclass(frozen=True)
class Links:
    """A device's links, per direction, and its collective latencies (seconds per kind)."""
    scale_up: sp.Expr | None                 # B/s per direction inside a node (NVLink, xGMI, ICI)
    scale_out: sp.Expr | None = None         # B/s per GPU per direction between nodes (the NIC)
    gpus_per_node: int | None = None         # None: every group fits in one scale-up domain
    latency: dict = field(default_factory=dict)            # kind -> seconds, inside a node
    scale_out_latency: dict = field(default_factory=dict)  # kind -> seconds, across nodes


@dataclass
class Collective:
    """One collective of a call on the most loaded device."""
    component: str          # tp, ep or pp (what comm_bytes' component= picks)
    kind: str               # one of KINDS
    ranks: int              # devices in the group
    size: sp.Expr           # S: the tensor (all_reduce/all_gather/reduce_scatter/send); all_to_all: the
                            # bytes of the phase on the most loaded device
    layers: tuple = ()
    segment: str = ""
    mult: int = 1
    off_node: sp.Expr = sp.Integer(0)   # all_to_all / send: the fraction of the bytes that leaves the node


def per_node(ranks: int, gpus_per_node: int | None, loc) -> int:
    """How many devices of a group of `ranks` share a node (consecutive ranks fill nodes)."""
    if gpus_per_node is None or ranks <= gpus_per_node:
        return ranks
    if ranks % gpus_per_node:
        raise SpecError(f"a group of {ranks} devices does not fill whole nodes of {gpus_per_node}", loc,
                        expected=f"a degree that is a multiple of gpus_per_node={gpus_per_node}")
    return gpus_per_node


def traffic(c: Collective, gpus_per_node: int | None, loc) -> tuple:
    """(scale-up bytes, scale-out bytes, [(link, kind) of each latency term]) of the most loaded device."""
    n, size = c.ranks, c.size
    if c.kind in ("all_to_all", "send"):
        out = size * c.off_node
        up = size - out
        link = "up" if c.off_node == 0 else "out"
        return up, out, [(link, c.kind)]
    a = per_node(n, gpus_per_node, loc)
    b = n // a
    if c.kind == "all_reduce":
        if b == 1:
            return 2 * sp.Rational(n - 1, n) * size, sp.Integer(0), [("up", c.kind)]
        return (2 * sp.Rational(a - 1, a) * size, 2 * sp.Rational(b - 1, b) * size / a,
                [("up", "reduce_scatter"), ("out", "all_reduce"), ("up", "all_gather")])
    if c.kind in ("all_gather", "reduce_scatter"):
        if b == 1:
            return sp.Rational(n - 1, n) * size, sp.Integer(0), [("up", c.kind)]
        return sp.Rational(a - 1, a) * size, sp.Rational(b - 1, b) * size / a, [("out", c.kind), ("up", c.kind)]
    raise ValueError(c.kind)


def bytes_moved(c: Collective, gpus_per_node: int | None, loc):
    up, out, _ = traffic(c, gpus_per_node, loc)
    return up + out


def seconds(c: Collective, links: Links, loc, moved: tuple | None = None):
    """Latency terms plus bytes over the per-direction rate of the link they cross (moved: the
    collective's traffic on these links' nodes, when the caller has it)."""
    up, out, lats = moved or traffic(c, links.gpus_per_node, loc)
    total = sp.Integer(0)
    for link, kind in lats:
        table = links.scale_out_latency if link == "out" and links.scale_out_latency else links.latency
        total += table.get(kind, sp.Integer(0))
    if up != 0:
        if links.scale_up is None:
            raise SpecError("this deployment communicates inside a node, and the device gives no scale-up link",
                            loc, expected="scale_up_link: in the device file, or link_bandwidth= in the query")
        total += up / links.scale_up
    if out != 0:
        if links.scale_out is None:
            raise SpecError("this deployment spans nodes, and the device gives no scale-out link", loc,
                            expected="scale_out_link: in the device file, or scale_out_bandwidth= in the query")
        total += out / links.scale_out
    return total
