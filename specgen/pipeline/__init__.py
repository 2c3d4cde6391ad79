"""Spark pipeline: decode captured traffic into Parquet, and report on it."""
