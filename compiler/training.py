"""Training-memory queries (weights, gradients, optimizer states, activations).

A mixin of QueryEngine, kept apart because training accounting is its own
family of conventions. TRAINING_QUERIES documents each query as QUERIES does."""

from __future__ import annotations

TRAINING_QUERIES: dict[str, str] = {}


class TrainingQueries:
    """Methods q_<name>(self, model, args) -> Quantity, like QueryEngine's."""
