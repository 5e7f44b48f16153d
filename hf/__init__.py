"""Reading Hugging Face configs: config fields and their spellings, quantization configs, and
the importer that writes a spec from a families table entry."""
