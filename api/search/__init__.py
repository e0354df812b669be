"""The one search engine: BM25 (bm25s) and exact dense cosine (numpy), fused by reciprocal
rank fusion, over per-agent in-process indexes kept in step with the table."""
