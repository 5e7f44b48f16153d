"""The fast lanes: closed forms printed as code (Python, JavaScript, numpy), compiled queries
and sweeps."""
