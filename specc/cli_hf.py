"""Commands that work with Hugging Face configurations: import-hf, crosscheck."""

from __future__ import annotations
