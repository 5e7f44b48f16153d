"""specc: LLM architectures as data, every cost an exact symbolic consequence."""

__version__ = "0.1.0"
