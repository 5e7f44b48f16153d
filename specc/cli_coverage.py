"""The coverage command: which catalog ids the shipped claims encode."""

from __future__ import annotations
