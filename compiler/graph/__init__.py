"""Compiling a spec into a model: blocks instantiated, primitive ops and their costs, the block
reference, the compiled-model cache."""
