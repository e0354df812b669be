"""PORT: texts to vectors. One module per backend, imported only when chosen
(`get_embedding_backend`), so a backend's dependencies are needed only by those who use it."""
