"""The on-disk caches: one signed, per-user store (disk_cache), its plain-data codec, and the
parse cache."""
