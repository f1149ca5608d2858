"""The recorded results in results/: their dataclasses (schema) and where each file lives and how it is read (results)."""
