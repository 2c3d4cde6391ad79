"""Spark pipeline: decode captured traffic into Parquet, and the sections a report is made of."""
