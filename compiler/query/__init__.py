"""The queries: their declarations, the query value, the engine, one module per family and
vLLM's allocator rules for the capacity queries."""
